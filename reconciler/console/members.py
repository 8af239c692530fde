"""The overview's member clusters: each Cluster resource the host keeps (watched), its
failover state as the reconciler last wrote it (``status.failover``), and what this
``serve`` sees of it now: whether its API server answers and how many of its nodes are
Ready (one watch of its Node objects, so a page makes no request)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import Any, Protocol

from reconciler.clients.cache import KindWatch
from reconciler.clients.connect import ClusterUnreachable, Connection, KubeconfigError
from reconciler.host import spec_kinds
from reconciler.kinds import KindInfo
from reconciler.model import Obj

NODE = KindInfo("v1", "Node", namespaced=False)
EVERY_NODE = "kubernetes.io/os"
"""A label every kubelet sets: the node watch's selector (it must name one)."""
FORBIDDEN = "forbidden"
"""In the API server's message of a 403 (``nodes is forbidden: User ... cannot list``)."""


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
        failover = (cr.get("status") or {}).get("failover") or {}
        known = MemberHealth(name, None, failover=str(failover.get("phase") or "Reachable"),
                             failover_reason=str(failover.get("reason") or ""),
                             since=str(failover.get("since") or ""))
        watch = self._node_watch(name, str((cr.get("spec") or {}).get("context") or name))
        if isinstance(watch, str):
            return replace(known, reachable=False, problem=watch)
        with watch.lock:
            nodes = list(watch.objects.values())
        return seen(known, watch.error, watch.synced.is_set(), nodes)

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


def seen(known: MemberHealth, error: str | None, synced: bool,
         nodes: list[Obj]) -> MemberHealth:
    """A member's health from its node watch: the error it last met, whether it has
    listed, the nodes it holds. A 403 means the API server answered (reachable) but this
    ``serve`` may not list nodes there."""
    if error is not None and FORBIDDEN in error:
        return replace(known, reachable=True, nodes_readable=False,
                       problem=f"nodes not readable: {error}")
    if not synced:
        return replace(known, reachable=None if error is None else False,
                       problem=error or "")
    return replace(known, reachable=error is None, problem=error or "",
                   nodes_ready=sum(map(node_ready, nodes)), nodes=len(nodes))


def node_ready(node: Obj) -> bool:
    conditions: list[dict[str, Any]] = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _name(cr: Obj) -> str:
    return str((cr.get("metadata") or {}).get("name") or "")
