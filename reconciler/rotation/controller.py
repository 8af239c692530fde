"""A node rotation in one member cluster, one tick at a time (``serve``'s leader of the
cluster's shard runs it): batch by batch, cordon the batch's nodes, evict their pods
through the Eviction API (PodDisruptionBudgets and grace periods honoured), wait until
every moved workload is back to its desired Ready replicas, delete the old Nodes (the
provider brings replacements up), wait for a Ready replacement of each in its pool, pause,
and go on. Every transition is written to the Cluster's ``status.rotation`` on the host
before the next, so a restarted or new leader resumes where it stood and never replaces a
node twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from pincompile.contract import RotationPolicy, duration_seconds
from reconciler.remediation import drain
from reconciler.remediation.controller import Member
from reconciler.remediation.metrics import NodeMetrics
from reconciler.remediation.nodes import ROTATION_ANNOTATION, NodeView
from reconciler.remediation.record import Recorder
from reconciler.rotation import apps, plan
from reconciler.rotation.plan import Request, Rotation, RotationNode


class Rotator:
    """Rotations of the member clusters this process leads."""

    def __init__(self, recorder: Recorder, metrics: NodeMetrics,
                 clock: Callable[[], float] = time.time) -> None:
        self.recorder, self.metrics, self.clock = recorder, metrics, clock
        self._warned: dict[tuple[str, str], float] = {}
        self._current: dict[str, Rotation] = {}
        """What this process last wrote, per cluster (the host's watch may lag behind)."""

    def forget(self, cluster: str) -> None:
        """This process no longer leads ``cluster``: the next leader reads the host."""
        self._current.pop(cluster, None)

    def tick(self, member: Member, policy: RotationPolicy, request: Request | None,
             paused_by: str | None, stored: Mapping[str, Any] | None
             ) -> dict[str, Any] | None:
        """One round; the ``status.rotation`` to keep (None: nothing to write)."""
        nodes = member.views()
        if request is None or nodes is None:
            return None
        now = self.clock()
        rotation = self._current.get(member.name) or plan.from_status(stored)
        if rotation is None or rotation.id != request.id:
            rotation = plan.start(request, policy, nodes, now)
            self.recorder.cluster(member.name, "RotationStarted",
                                  f"rotating {len(rotation.nodes)} node(s) for "
                                  f"{request.by or 'someone'}, {rotation.batch} at a time: "
                                  + ", ".join(n.name for n in rotation.nodes),
                                  rotation=rotation.id)
        self._current[member.name] = rotation
        if rotation.phase == "Complete":
            self.metrics.rotation_left.labels(member.name).set(0)
            return rotation.to_status()
        by_name = {n.name: n for n in nodes}
        self._advance(member, rotation, policy, by_name, paused_by, now)
        self.metrics.rotation_left.labels(member.name).set(rotation.left)
        return rotation.to_status()

    def _advance(self, member: Member, rotation: Rotation, policy: RotationPolicy,
                 nodes: Mapping[str, NodeView], paused_by: str | None, now: float) -> None:
        rotation.phase, rotation.message = "Running", ""
        for index, node in enumerate(rotation.nodes):
            if node.state in ("Draining", "Drained") and node.name not in nodes:
                rotation.nodes[index] = replace(node, state="Removed", since=now)
        states = {n.state for n in rotation.in_flight}
        if "Draining" in states:
            self._drain(member, rotation, now)
        elif "Drained" in states:
            self._remove(member, rotation, policy, now)
        elif states:
            self._replace(member, rotation, policy, now)
        if not rotation.in_flight:
            self._next_batch(member, rotation, policy, nodes, paused_by, now)
        elif paused_by:
            rotation.message += f" (paused by {paused_by}: this batch finishes, no new one " \
                                "starts)"

    def _next_batch(self, member: Member, rotation: Rotation, policy: RotationPolicy,
                    nodes: Mapping[str, NodeView], paused_by: str | None, now: float) -> None:
        pending = rotation.pending
        if not pending:
            rotation.phase, rotation.finished = "Complete", now
            rotation.message = f"every node replaced ({len(rotation.nodes)})"
            self.recorder.cluster(member.name, "RotationComplete", rotation.message,
                                  rotation=rotation.id)
            return
        why = self._why_wait(member, rotation, policy, pending, nodes, paused_by, now)
        if why is not None:
            rotation.phase = "Paused" if paused_by else "Waiting"
            rotation.message = why
            return
        batch = pending[:rotation.batch]
        for node in batch:
            if node.name in nodes:
                member.update(drain.cordon(member.conn, node.name,
                                           {ROTATION_ANNOTATION: rotation.id}))
        names = {n.name for n in batch}
        for index, node in enumerate(rotation.nodes):
            if node.name in names:
                state = "Draining" if node.name in nodes else "Removed"
                rotation.nodes[index] = replace(node, state=state, since=now, started=now)
        rotation.message = f"draining {', '.join(sorted(names))}"
        self.recorder.cluster(member.name, "RotationBatch",
                              f"cordoned {', '.join(sorted(names))}; evicting their pods",
                              rotation=rotation.id)

    def _why_wait(self, member: Member, rotation: Rotation, policy: RotationPolicy,
                  pending: Sequence[RotationNode], nodes: Mapping[str, NodeView],
                  paused_by: str | None, now: float) -> str | None:
        """Why the next batch cannot start now (None: it can)."""
        if paused_by:
            return (f"paused by {paused_by}: no new batch starts until `pincompile rotate "
                    f"{member.name} --resume`; {len(pending)} node(s) left")
        if rotation.next_batch_at is not None and now < rotation.next_batch_at:
            return f"pausing {rotation.next_batch_at - now:.0f}s between batches"
        closed = plan.window(policy, now)
        if closed is not None:
            return closed
        batch = [n.name for n in pending[:rotation.batch] if n.name in nodes]
        pods = [p for name in batch for p in drain.pods_on(member.conn, name)]
        held = apps.blocking(pods, apps.budgets(member.conn)) if pods else []
        if held:
            return (f"waiting before draining {', '.join(batch)}: " + "; ".join(held)
                    + " (an eviction would break it)")
        return None

    def _drain(self, member: Member, rotation: Rotation, now: float) -> None:
        blocked: list[str] = []
        for index, node in enumerate(rotation.nodes):
            if node.state != "Draining":
                continue
            pods = drain.pods_on(member.conn, node.name)
            affected = set(node.affected) | {w for p in pods if (w := apps.workload_of(p))}
            step = drain.drain_step(member.conn, node.name, pods=pods)
            for pod in step.evicted:
                self.recorder.moved(member.name, node.name, pod, f"rotation {rotation.id}")
            self.metrics.evictions.labels(member.name, "rotation", "evicted").inc(
                len(step.evicted))
            self.metrics.evictions.labels(member.name, "rotation", "blocked").inc(
                len(step.blocked))
            blocked += step.blocked
            rotation.nodes[index] = replace(node, affected=sorted(affected))
            if step.done:
                rotation.nodes[index] = replace(rotation.nodes[index], state="Drained",
                                                since=now)
        draining = [n.name for n in rotation.nodes if n.state == "Draining"]
        rotation.message = f"draining {', '.join(draining)}" if draining else "drained"
        if blocked:
            rotation.phase = "Waiting"
            rotation.message += ("; an eviction would break a PodDisruptionBudget, retrying: "
                                 + "; ".join(blocked[:3]))

    def _remove(self, member: Member, rotation: Rotation, policy: RotationPolicy,
                now: float) -> None:
        """Once every drained node's workloads are back: delete those nodes."""
        drained = [n for n in rotation.nodes if n.state == "Drained"]
        waiting = apps.not_back(member.conn, [a for n in drained for a in n.affected])
        if waiting:
            rotation.phase = "Waiting"
            rotation.message = ("waiting until the moved workloads are Ready again before "
                                f"removing {', '.join(n.name for n in drained)}: "
                                + ", ".join(waiting[:5]))
            self._late(member, rotation, policy, drained, rotation.message, now)
            return
        for index, node in enumerate(rotation.nodes):
            if node.state == "Drained":
                self.recorder.node(member.conn, member.name, node.name, "RotationNodeRemoved",
                                   f"drained and its workloads Ready elsewhere: deleting the "
                                   f"Node (rotation {rotation.id})", rotation=rotation.id)
                drain.delete_node(member.conn, node.name)
                member.drop(node.name)
                rotation.nodes[index] = replace(node, state="Removed", since=now)
        rotation.message = "waiting for the replacements to be Ready"

    def _replace(self, member: Member, rotation: Rotation, policy: RotationPolicy,
                 now: float) -> None:
        found = plan.replacements(rotation, member.views() or [])
        for old, new in found:
            index = next(i for i, n in enumerate(rotation.nodes) if n.name == old)
            node = rotation.nodes[index]
            rotation.nodes[index] = plan.replaced(node, new, now)
            self.metrics.rotated.labels(member.name).inc()
            if node.started is not None:
                self.metrics.node_seconds.labels(member.name).observe(now - node.started)
            self.recorder.cluster(member.name, "RotationNodeReplaced",
                                  f"{old} replaced by {new.name}"
                                  + (f" (version {rotation.nodes[index].version})"
                                     if rotation.nodes[index].version else ""),
                                  rotation=rotation.id, node=old, replacement=new.name)
        removed = [n for n in rotation.nodes if n.state == "Removed"]
        if removed:
            rotation.message = ("waiting for a Ready replacement of "
                                + ", ".join(f"{n.name} (pool {n.pool or '-'})" for n in removed))
            self._late(member, rotation, policy, removed, rotation.message, now)
        elif rotation.pause:
            rotation.next_batch_at = now + rotation.pause

    def _late(self, member: Member, rotation: Rotation, policy: RotationPolicy,
              nodes: Sequence[RotationNode], message: str, now: float) -> None:
        """A step waiting past ``stepTimeout``: a Warning, once per timeout."""
        since = min((n.since or now) for n in nodes)
        limit = duration_seconds(policy.step_timeout)
        key = (member.name, rotation.id)
        if now - since < limit or now - self._warned.get(key, 0.0) < limit:
            return
        self._warned[key] = now
        self.recorder.cluster(member.name, "RotationStepLate",
                              f"for {now - since:.0f}s (stepTimeout {policy.step_timeout}): "
                              f"{message}", warning=True, rotation=rotation.id)
