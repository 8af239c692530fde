"""Node remediation and rotation inside ``serve``: one thread that, every ``interval``,
takes each member cluster this process leads (the leader of its shard) whose Cluster
resource on the host asks for either — a ``remediation`` policy, or a rotation request
(:mod:`reconciler.rotation.plan`) — through one tick of
:class:`~reconciler.remediation.controller.Remediator` and
:class:`~reconciler.rotation.controller.Rotator`, and keeps what they give back in the
Cluster's status on the host (each under a field manager of its own, so neither the
reconciler's pass nor the other ever removes it).

The Cluster resources come from a watch of the host (the pass keeps them equal to git);
each member's Nodes from a watch opened the first time that member needs one.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from pincompile.contract import RemediationPolicy, RotationPolicy
from reconciler.clients import write
from reconciler.clients.cache import KindWatch
from reconciler.clients.connect import Connection, KubeconfigError, RetryPolicy
from reconciler.errors import CLUSTER_ERRORS, explain
from reconciler.host import API_VERSION, spec_kinds
from reconciler.remediation.controller import Member, Remediator
from reconciler.remediation.drain import NODE
from reconciler.remediation.metrics import NodeMetrics
from reconciler.remediation.nodes import EVERY_NODE, lean_node
from reconciler.remediation.record import Recorder
from reconciler.rotation.controller import Rotator
from reconciler.rotation.plan import (
    PAUSED_BY_ANNOTATION,
    REQUEST_ANNOTATION,
    STATUS_MANAGER,
    RequestError,
    parse_request,
)

log = logging.getLogger("pincompile.nodes")
REMEDIATION_MANAGER = "pincompile-remediation"
MODES = ("on", "dry-run", "off")
Led = Callable[[Sequence[str]], set[str]]
"""The member clusters (of those named) this process leads now."""


class NodeCare:
    """Remediation and rotation for the member clusters this process leads."""

    def __init__(self, host: Connection, kubeconfig: str | None, led: Led,
                 recorder: Recorder, metrics: NodeMetrics, *, interval: float = 5.0,
                 mode: str = "on", clock: Callable[[], float] = time.time) -> None:
        self.host, self.kubeconfig, self.led = host, kubeconfig, led
        self.interval, self.mode = interval, mode
        self.metrics = metrics
        self.remediator = Remediator(recorder, metrics, clock)
        self.rotator = Rotator(recorder, metrics, clock)
        self.stop = threading.Event()
        kind = next(k for k in spec_kinds() if k.kind == "Cluster")
        self.clusters = KindWatch(host, kind, self.stop)
        self._members: dict[str, Member] = {}
        self._leading: set[str] = set()
        self._written: dict[tuple[str, str], Any] = {}
        self._complaints: dict[str, str] = {}

    def run(self) -> None:
        """Tick every ``interval`` until :meth:`close`."""
        self.clusters.thread.start()
        while not self.stop.wait(self.interval):
            started = time.monotonic()
            try:
                self.tick()
            except Exception:  # a bug must not end the thread: say so, go on
                log.exception("node remediation and rotation")
            self.metrics.round_seconds.observe(time.monotonic() - started)

    def close(self) -> None:
        self.stop.set()
        for member in self._members.values():
            member.conn.close()
        self.host.close()

    def tick(self) -> None:
        """One round over the member clusters this process leads."""
        if not self.clusters.synced.is_set():
            return
        with self.clusters.lock:
            crs = {str(cr["metadata"]["name"]): cr for cr in self.clusters.objects.values()}
        leading = self.led(sorted(crs))
        for gone in self._leading - leading:
            self.remediator.forget(gone)
            self.rotator.forget(gone)
            self._written = {k: v for k, v in self._written.items() if k[0] != gone}
        self._leading = leading
        for name in sorted(leading):
            try:
                self._cluster(name, crs[name])
            except CLUSTER_ERRORS as exc:
                self._complain(name, f"cannot act in {name} now: {explain(exc)}")

    def _cluster(self, name: str, cr: Mapping[str, Any]) -> None:
        spec = cr.get("spec") or {}
        annotations = (cr.get("metadata") or {}).get("annotations") or {}
        status = cr.get("status") or {}
        try:
            remediation = RemediationPolicy.model_validate(spec["remediation"]) \
                if spec.get("remediation") and self.mode != "off" else None
            rotation = RotationPolicy.model_validate(spec.get("rotation") or {})
            request = parse_request(annotations.get(REQUEST_ANNOTATION))
        except (ValidationError, RequestError) as exc:
            self._complain(name, f"cluster {name}: {str(exc).splitlines()[0]}")
            return
        if remediation is None and request is None:
            return
        member = self._member(name, str(spec.get("context") or name))
        if member is None:
            return
        if not member.nodes.synced.is_set():
            if member.nodes.error:
                self._complain(name, f"cannot read the nodes of {name}: {member.nodes.error} "
                                     "(contrib/serve/rbac-member-nodes.yaml grants it)")
            return
        if remediation is not None:
            doc = self.remediator.tick(member, remediation, status.get("remediation"),
                                       dry_run=self.mode == "dry-run")
            self._keep(name, "remediation", doc, REMEDIATION_MANAGER)
        if request is not None:
            doc = self.rotator.tick(member, rotation, request,
                                    annotations.get(PAUSED_BY_ANNOTATION) or None,
                                    status.get("rotation"))
            self._keep(name, "rotation", doc, STATUS_MANAGER)

    def _member(self, name: str, context: str) -> Member | None:
        member = self._members.get(name)
        if member is None:
            try:
                conn = Connection(name, context, self.kubeconfig, retry=RetryPolicy(attempts=1))
            except KubeconfigError as exc:
                self._complain(name, f"cluster {name}: {exc}")
                return None
            watch = KindWatch(conn, NODE, self.stop, label_selector=EVERY_NODE,
                              keep=lean_node)
            watch.thread.start()
            member = self._members[name] = Member(name, conn, watch)
        return member

    def _keep(self, name: str, field: str, doc: dict[str, Any] | None, manager: str) -> None:
        """Write ``status.<field>`` of the Cluster when it changed since last written."""
        if doc is None or self._written.get((name, field)) == doc:
            return
        write.apply(self.host, {"apiVersion": API_VERSION, "kind": "Cluster",
                                "metadata": {"name": name}, "status": {field: doc}},
                    subresource="status", manager=manager)
        self._written[(name, field)] = doc

    def _complain(self, name: str, message: str) -> None:
        """Log a problem once (again only when it changes)."""
        if self._complaints.get(name) != message:
            self._complaints[name] = message
            log.warning("%s", message)


def led_by(service: Any) -> Led:
    """The clusters a ``serve`` process (its :class:`~reconciler.serve.service.Service`)
    leads: those of its shards (all when unsharded)."""
    def led(names: Sequence[str]) -> set[str]:
        leading = service.state.leading
        if not leading:
            return set()
        chosen = service.scope(names, leading)
        return set(names) if chosen is None else set(chosen) & set(names)

    return led


def node_care(options: Any, service: Any, registry: Any) -> NodeCare | None:
    """The NodeCare of a ``serve`` process (its options, its Service, its metrics'
    registry); None when the host cannot be reached through the kubeconfig."""
    try:
        host = Connection("host", options.host_context, options.kubeconfig)
    except KubeconfigError as exc:
        log.warning("node remediation and rotation are off: %s", exc)
        return None
    recorder = Recorder(host, options.audit_log)
    return NodeCare(host, options.kubeconfig, led_by(service), recorder, NodeMetrics(registry),
                    interval=options.nodes_interval, mode=options.remediation)
