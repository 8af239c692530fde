"""Remediation in one member cluster, one tick at a time: read its nodes (a watch), ask
:func:`~reconciler.remediation.decide.decide` what to do, do it (cordon, drain through
the Eviction API, delete the Node), record every decision and action
(:mod:`~reconciler.remediation.record`, :mod:`~reconciler.remediation.metrics`), and give
back the state to keep on the host (the Cluster's ``status.remediation``: the circuit and
the actions of the last hour, which the hourly limit counts, so a new leader keeps to it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pincompile.contract import RemediationPolicy, duration_seconds
from reconciler.clients.cache import KindWatch
from reconciler.clients.connect import Connection
from reconciler.clock import iso_time, parse_time
from reconciler.remediation import drain
from reconciler.remediation.decide import (
    HOUR,
    ActionRecord,
    Decision,
    Release,
    Start,
    decide,
    present_signals,
)
from reconciler.remediation.metrics import NodeMetrics
from reconciler.remediation.nodes import (
    REMEDIATION_ANNOTATION,
    Mark,
    NodeView,
    lean_node,
    node_view,
)
from reconciler.remediation.record import Recorder

ACTION_REASONS = {"cordon": "RemediationCordon", "drain": "RemediationDrain",
                  "terminate": "RemediationTerminate"}


@dataclass
class Member:
    """One member cluster as the node controllers reach it: a connection that does not
    retry (a refused eviction is answered at once, not slept on) and a watch of its
    Nodes."""

    name: str
    conn: Connection
    nodes: KindWatch

    def update(self, node: Mapping[str, Any]) -> None:
        """Put a Node this process just wrote into the watch's view at once (its watch
        event may come after the next tick, which must not act on it again)."""
        kept = lean_node(node)
        with self.nodes.lock:
            key = ("Node", "", str(kept["metadata"]["name"]))
            held = self.nodes.objects.get(key)
            if held is None or _version(held) <= _version(kept):
                self.nodes.objects[key] = kept

    def drop(self, node: str) -> None:
        """Forget a Node this process just deleted."""
        with self.nodes.lock:
            self.nodes.objects.pop(("Node", "", node), None)

    def views(self) -> list[NodeView] | None:
        """Its nodes now (None until the watch has listed them)."""
        if not self.nodes.synced.is_set():
            return None
        with self.nodes.lock:
            return sorted((node_view(n) for n in self.nodes.objects.values()),
                          key=lambda n: n.name)


def stored_actions(status: Mapping[str, Any] | None, now: float) -> list[ActionRecord]:
    """The actions of the last hour a Cluster's ``status.remediation`` keeps."""
    found = []
    for item in (status or {}).get("actions") or []:
        at = parse_time(item.get("at"))
        if at is not None and now - HOUR < at <= now:
            found.append(ActionRecord(str(item.get("node") or ""), str(item.get("action")),
                                      at, str(item.get("reason") or "")))
    return found


class Remediator:
    """Remediation for the member clusters this process leads; remembers, per cluster, the
    actions of the hour, when annotation signals were first seen, the open circuits and
    what it last said about each waiting node (so an Event says a thing once)."""

    def __init__(self, recorder: Recorder, metrics: NodeMetrics,
                 clock: Callable[[], float] = time.time) -> None:
        self.recorder, self.metrics, self.clock = recorder, metrics, clock
        self._history: dict[str, list[ActionRecord]] = {}
        self._seen: dict[str, dict[tuple[str, str], float]] = {}
        self._open: dict[str, set[str]] = {}
        self._said: dict[tuple[str, str], str] = {}
        self._stuck: dict[tuple[str, str], float] = {}

    def forget(self, cluster: str) -> None:
        """This process no longer leads ``cluster``: the next leader reads the host."""
        for memory in (self._history, self._seen, self._open):
            memory.pop(cluster, None)
        self._said = {k: v for k, v in self._said.items() if k[0] != cluster}

    def tick(self, member: Member, policy: RemediationPolicy,
             stored: Mapping[str, Any] | None, *, dry_run: bool = False
             ) -> dict[str, Any] | None:
        """One round in ``member``; the ``status.remediation`` to keep (None: not read yet)."""
        nodes = member.views()
        if nodes is None:
            return None
        now = self.clock()
        name = member.name
        if name not in self._history:
            self._history[name] = stored_actions(stored, now)
        history = [r for r in self._history[name] if now - HOUR < r.at <= now]
        seen = self._track(name, nodes, policy, now)
        decision = decide(nodes, policy, history, now, seen)
        dry = dry_run or policy.mode == "dry-run"
        self._circuits(member, decision, stored, now)
        for release in decision.releases:
            self._release(member, release, dry)
        for start in decision.starts:
            if self._start(member, start, dry, now):
                history.append(ActionRecord(start.node, start.action, now, start.reason))
        for wait in decision.waits:
            self._say(member, wait.node, "RemediationWaiting",
                      f"needs {wait.action}: {wait.reason}", key=wait.reason.split("; ")[-1])
        if not dry:
            self._drains(member, nodes, decision, policy, now)
        self._history[name] = history
        self.metrics.unhealthy.labels(name).set(len(decision.unhealthy))
        self.metrics.waiting.labels(name).set(len(decision.waits))
        return self._status(decision, history, nodes, "dry-run" if dry else "enforce", stored,
                            now)

    def _track(self, cluster: str, nodes: Sequence[NodeView], policy: RemediationPolicy,
               now: float) -> dict[tuple[str, str], float]:
        """When each signal without a time of its own was first seen present."""
        before = self._seen.get(cluster, {})
        seen: dict[tuple[str, str], float] = {}
        for node in nodes:
            for present in present_signals(node, policy, now, before):
                seen[(node.name, present.signal.name)] = before.get(
                    (node.name, present.signal.name), now)
        self._seen[cluster] = seen
        return seen

    def _circuits(self, member: Member, decision: Decision,
                  stored: Mapping[str, Any] | None, now: float) -> None:
        name = member.name
        open_now = {_scope(c.zone): c for c in decision.open}
        before = self._open.get(name)
        if before is None:  # a new leader: what the host says was raised already
            before = set(open_now) if (stored or {}).get("circuit") == "Open" else set()
        for scope in sorted(set(open_now) - before):
            circuit = open_now[scope]
            self.recorder.cluster(name, "RemediationCircuitOpen", circuit.reason(),
                                  warning=True, scope=scope, unhealthy=circuit.unhealthy,
                                  nodes=circuit.nodes)
        for scope in sorted(before - set(open_now)):
            self.recorder.cluster(name, "RemediationCircuitClosed",
                                  f"{_label(scope)} recovered: remediation acts again there",
                                  scope=scope)
        self._open[name] = set(open_now)
        self.metrics.set_circuits(name, {_scope(c.zone): c.open for c in decision.circuits}
                                  | {scope: False for scope in before - set(open_now)})

    def _start(self, member: Member, start: Start, dry: bool, now: float) -> bool:
        """Start ``start``'s action (cordon now; a drain goes on in :meth:`_drains`);
        whether it was started (dry-run: reported only)."""
        verb = {"cordon": "cordon", "drain": "cordon and drain",
                "terminate": "cordon, drain and delete"}[start.action]
        if dry:
            if self._say(member, start.node, "RemediationDryRun",
                         f"dry-run: would {verb} the node: {start.reason}", key=start.action):
                self.metrics.actions.labels(member.name, start.action, "dry-run").inc()
            return False
        node = next((n for n in member.views() or [] if n.name == start.node), None)
        if node is None:
            return False
        old = node.mark
        mark = Mark(start.action, "cordoned" if start.action == "cordon" else "draining",
                    old.at if old else now, start.signal,
                    old.was_unschedulable if old else node.unschedulable)
        member.update(drain.cordon(member.conn, node.name,
                                   {REMEDIATION_ANNOTATION: mark.to_json()}))
        further = f" (it was under {start.escalates})" if start.escalates else ""
        self.recorder.node(member.conn, member.name, node.name, ACTION_REASONS[start.action],
                           f"{verb}{further}: {start.reason}", uid=node.uid,
                           action=start.action, signal=start.signal)
        self.metrics.actions.labels(member.name, start.action, "enforce").inc()
        self._said.pop((member.name, node.name), None)
        return True

    def _release(self, member: Member, release: Release, dry: bool) -> None:
        if dry:
            return
        member.update(drain.patch(member.conn, release.node,
                                  unschedulable=False if release.uncordon else None,
                                  annotations={REMEDIATION_ANNOTATION: None}))
        if release.uncordon:
            self.recorder.node(member.conn, member.name, release.node, "NodeUncordoned",
                               f"schedulable again: {release.reason}", action="uncordon")
            self.metrics.actions.labels(member.name, "uncordon", "enforce").inc()

    def _drains(self, member: Member, nodes: Sequence[NodeView], decision: Decision,
                policy: RemediationPolicy, now: float) -> None:
        """One step of every drain under way outside an open circuit."""
        for node in member.views() or nodes:
            mark = node.mark
            if mark is None or mark.phase != "draining" or node.name in decision.frozen:
                continue
            step = drain.drain_step(member.conn, node.name)
            why = f"remediation ({mark.signal})"
            for pod in step.evicted:
                self.recorder.moved(member.name, node.name, pod, why)
            self.metrics.evictions.labels(member.name, "remediation", "evicted").inc(
                len(step.evicted))
            self.metrics.evictions.labels(member.name, "remediation", "blocked").inc(
                len(step.blocked))
            if step.done:
                self._drained(member, node, mark)
            elif step.blocked and now - mark.at > duration_seconds(policy.drain_timeout):
                self._blocked(member, node, mark, step.blocked, policy, now)

    def _drained(self, member: Member, node: NodeView, mark: Mark) -> None:
        if mark.action == "terminate":
            self.recorder.node(member.conn, member.name, node.name, "NodeTerminated",
                               f"drained; deleting the Node ({mark.signal})", uid=node.uid,
                               action="terminate")
            drain.delete_node(member.conn, node.name)
            member.drop(node.name)
            return
        member.update(drain.patch(member.conn, node.name, annotations={
            REMEDIATION_ANNOTATION: replace(mark, phase="drained").to_json()}))
        self.recorder.node(member.conn, member.name, node.name, "NodeDrained",
                           f"every pod moved off the node ({mark.signal}); it stays "
                           "cordoned until no signal holds", uid=node.uid, action="drain")

    def _blocked(self, member: Member, node: NodeView, mark: Mark, blocked: list[str],
                 policy: RemediationPolicy, now: float) -> None:
        """Past ``drainTimeout`` and still refused: a Warning, once per timeout."""
        key = (member.name, node.name)
        every = duration_seconds(policy.drain_timeout)
        if now - self._stuck.get(key, 0.0) < every:
            return
        self._stuck[key] = now
        self.recorder.node(member.conn, member.name, node.name, "DrainBlocked",
                           f"draining for {now - mark.at:.0f}s (drainTimeout "
                           f"{policy.drain_timeout}); PodDisruptionBudgets refuse: "
                           + "; ".join(blocked[:5]), warning=True, uid=node.uid)

    def _say(self, member: Member, node: str, reason: str, message: str, *,
             key: str) -> bool:
        """An Event on ``node`` unless the same was said last time (``key``); whether it
        was said."""
        if self._said.get((member.name, node)) == f"{reason}:{key}":
            return False
        self._said[(member.name, node)] = f"{reason}:{key}"
        self.recorder.node(member.conn, member.name, node, reason, message)
        return True

    def _status(self, decision: Decision, history: Sequence[ActionRecord],
                nodes: Sequence[NodeView], mode: str, stored: Mapping[str, Any] | None,
                now: float) -> dict[str, Any]:
        opened = decision.open
        circuit = "Open" if opened else "Closed"
        since = (stored or {}).get("since") if (stored or {}).get("circuit") == circuit \
            else iso_time(now)
        return {"mode": mode, "circuit": circuit,
                "reason": "; ".join(c.reason() for c in opened),
                "since": since or iso_time(now), "unhealthy": len(decision.unhealthy),
                "nodes": len(nodes),
                "actions": [{"node": r.node, "action": r.action, "at": iso_time(r.at),
                             "reason": r.reason[:300]} for r in history]}


def _version(node: Mapping[str, Any]) -> int:
    try:
        return int((node.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


def _scope(zone: str | None) -> str:
    return "cluster" if zone is None else f"zone/{zone}"


def _label(scope: str) -> str:
    return "the cluster" if scope == "cluster" else f"zone {scope.split('/', 1)[1]}"
