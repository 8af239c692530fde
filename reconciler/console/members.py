"""The overview's member clusters: each Cluster resource the host keeps (watched), its
failover state as the reconciler last wrote it (``status.failover``), its rotation (in
progress, paused, the policy's batch and pause), and what this ``serve`` sees of it now:
whether its API server answers, how many of its nodes are Ready and which carry a signal
of its remediation policy (one watch of its Node objects, so a page makes no request)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import Any, Protocol

from fastapi import HTTPException
from pydantic import ValidationError

from pincompile.contract import RemediationPolicy, RotationPolicy
from reconciler.api.rotations import running
from reconciler.clients.cache import KindWatch
from reconciler.clients.connect import ClusterUnreachable, Connection, KubeconfigError
from reconciler.host import spec_kinds
from reconciler.kinds import KindInfo
from reconciler.model import Obj
from reconciler.remediation.nodes import node_view
from reconciler.remediation.summary import SignalledNode, care_summary, signalled_nodes
from reconciler.rotation.plan import PAUSED_BY_ANNOTATION

NODE = KindInfo("v1", "Node", namespaced=False)
EVERY_NODE = "kubernetes.io/os"
"""A label every kubelet sets: the node watch's selector (it must name one)."""
FORBIDDEN = "forbidden"
"""In the API server's message of a 403 (``nodes is forbidden: User ... cannot list``)."""
SIGNALLED_SHOWN = 20
"""Nodes with a signal listed per member (the panel says how many more)."""


@dataclass(frozen=True)
class MemberHealth:
    """One member cluster as the overview shows it."""

    name: str
    reachable: bool | None
    """None: not read yet."""
    problem: str = ""
    nodes_ready: int = 0
    nodes: int = 0
    nodes_readable: bool = True
    """False: the member answered, but this ``serve`` may not list its nodes."""
    failover: str = "Reachable"
    """Reachable, Unreachable, Lost or Returning (the reconciler's view)."""
    failover_reason: str = ""
    since: str = ""
    care: str = ""
    """Its nodes: the remediation circuit, unhealthy nodes, a rotation in progress."""
    signalled: tuple[SignalledNode, ...] = ()
    """Nodes carrying a signal of its remediation policy: the first ``SIGNALLED_SHOWN``."""
    signalled_total: int = 0
    rotation_busy: str = ""
    """Why a new rotation cannot start now (one is requested and not complete)."""
    rotation_paused_by: str = ""
    rotation_batch: str = ""
    rotation_pause: str = ""
    """Its rotation policy's batch and pause, the start form's defaults (empty: the policy
    is not readable, the field left empty means the policy's)."""

    @property
    def state(self) -> str:
        return ("checking" if self.reachable is None
                else "reachable" if self.reachable else "unreachable")


class MemberSource(Protocol):
    def health(self) -> list[MemberHealth]: ...


class MemberClusters:
    """Member clusters from a watch of the host's Cluster resources; each one's nodes from
    a watch started the first time a page asks (contexts from the Cluster's
    ``spec.context``, as the reconciler reaches it)."""

    def __init__(self, host: Connection, kubeconfig: str | None) -> None:
        self.kubeconfig = kubeconfig
        self._stop = threading.Event()
        kind = next(k for k in spec_kinds() if k.kind == "Cluster")
        self._clusters = KindWatch(host, kind, self._stop)
        self._clusters.thread.start()
        self._nodes: dict[str, KindWatch | str] = {}
        self._connections: list[Connection] = []
        self._lock = threading.Lock()

    def health(self) -> list[MemberHealth]:
        with self._clusters.lock:
            clusters = sorted(self._clusters.objects.values(), key=_name)
        return [self._health_of(cr) for cr in clusters]

    def _health_of(self, cr: Obj) -> MemberHealth:
        name = _name(cr)
        spec = cr.get("spec") or {}
        failover = (cr.get("status") or {}).get("failover") or {}
        known = rotation_of(cr, MemberHealth(
            name, None, failover=str(failover.get("phase") or "Reachable"),
            failover_reason=str(failover.get("reason") or ""),
            since=str(failover.get("since") or ""), care=care_summary(cr.get("status"))))
        watch = self._node_watch(name, str(spec.get("context") or name))
        if isinstance(watch, str):
            return replace(known, reachable=False, problem=watch)
        with watch.lock:
            nodes = list(watch.objects.values())
        return seen(known, watch.error, watch.synced.is_set(), nodes,
                    remediation_policy(spec))

    def _node_watch(self, name: str, context: str) -> KindWatch | str:
        with self._lock:
            if name not in self._nodes:
                try:
                    conn = Connection(name, context, self.kubeconfig)
                except (ClusterUnreachable, KubeconfigError) as exc:
                    self._nodes[name] = str(exc)
                else:
                    self._connections.append(conn)
                    watch = KindWatch(conn, NODE, self._stop, label_selector=EVERY_NODE)
                    watch.thread.start()
                    self._nodes[name] = watch
            return self._nodes[name]

    def close(self) -> None:
        self._stop.set()
        for conn in self._connections:
            conn.close()


def rotation_of(cr: Obj, known: MemberHealth) -> MemberHealth:
    """``known`` with the Cluster's rotation: whether one is in progress, who paused it,
    its policy's batch and pause."""
    annotations = (cr.get("metadata") or {}).get("annotations") or {}
    try:
        busy = running(cr) or ""
    except HTTPException as exc:  # a request annotation written by hand
        busy = str(exc.detail)
    try:
        policy = RotationPolicy.model_validate((cr.get("spec") or {}).get("rotation") or {})
    except ValidationError:
        batch = pause = ""
    else:
        batch, pause = str(policy.batch), str(policy.pause)
    return replace(known, rotation_busy=busy,
                   rotation_paused_by=str(annotations.get(PAUSED_BY_ANNOTATION) or ""),
                   rotation_batch=batch, rotation_pause=pause)


def remediation_policy(spec: Obj) -> RemediationPolicy | None:
    """The Cluster spec's remediation policy (None: none, or one serve refuses too)."""
    try:
        return RemediationPolicy.model_validate(spec["remediation"]) \
            if spec.get("remediation") else None
    except ValidationError:
        return None


def seen(known: MemberHealth, error: str | None, synced: bool, nodes: list[Obj],
         policy: RemediationPolicy | None = None) -> MemberHealth:
    """A member's health from its node watch: the error it last met, whether it has
    listed, the nodes it holds (those with a signal of ``policy``, when there is one). A
    403 means the API server answered (reachable) but this ``serve`` may not list nodes
    there."""
    if error is not None and FORBIDDEN in error:
        return replace(known, reachable=True, nodes_readable=False,
                       problem=f"nodes not readable: {error}")
    if not synced:
        return replace(known, reachable=None if error is None else False,
                       problem=error or "")
    signalled = signalled_nodes(map(node_view, nodes), policy) if policy else []
    return replace(known, reachable=error is None, problem=error or "",
                   nodes_ready=sum(map(node_ready, nodes)), nodes=len(nodes),
                   signalled=tuple(signalled[:SIGNALLED_SHOWN]),
                   signalled_total=len(signalled))


def node_ready(node: Obj) -> bool:
    conditions: list[dict[str, Any]] = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _name(cr: Obj) -> str:
    return str((cr.get("metadata") or {}).get("name") or "")
