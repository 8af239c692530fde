"""A node rotation as kept on the host (the Cluster's ``status.rotation``), the request
that starts one (an annotation the API writes), and the pure decisions: which nodes, in
which order and batches, whether a window is open, which new node replaces which.

A rotation's node list is fixed when it starts (names and uids), so a node that joins
later — a replacement — is never rotated by it, and a restarted or new leader resumes
the list where it stands: every node is replaced exactly once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from pincompile.contract import RotationPolicy, duration_seconds
from reconciler.clock import iso_time, parse_time
from reconciler.remediation.nodes import POOL_VERSION_LABEL, NodeView

REQUEST_ANNOTATION = "pincompute.io/rotation-request"
PAUSED_BY_ANNOTATION = "pincompute.io/rotation-paused-by"
REQUEST_MANAGER = "pincompile-api-rotation"
PAUSE_MANAGER = "pincompile-api-rotation-pause"
STATUS_MANAGER = "pincompile-rotation"
IN_FLIGHT = ("Draining", "Drained", "Removed")
"""Node states of the batch under way."""
MAX_BATCH = 100


class RequestError(ValueError):
    """A rotation request that cannot be used (its annotation was written by hand)."""


@dataclass(frozen=True)
class Request:
    """What ``pincompile rotate`` asked for."""

    id: str
    by: str
    pool: str = ""
    batch: int | None = None
    pause: str | None = None

    def to_json(self) -> str:
        return json.dumps({k: v for k, v in asdict(self).items() if v not in (None, "")},
                          sort_keys=True)


def parse_request(text: str | None) -> Request | None:
    """The request in the annotation (None: none); RequestError when it is not one."""
    if not text:
        return None
    try:
        data = json.loads(text)
        request = Request(id=str(data["id"]), by=str(data.get("by") or ""),
                          pool=str(data.get("pool") or ""),
                          batch=None if data.get("batch") is None else int(data["batch"]),
                          pause=None if data.get("pause") is None else str(data["pause"]))
    except (ValueError, TypeError, KeyError) as exc:
        raise RequestError(f"{REQUEST_ANNOTATION} is not a rotation request: {exc}") from exc
    if request.batch is not None and not 1 <= request.batch <= MAX_BATCH:
        raise RequestError(f"batch {request.batch} is not between 1 and {MAX_BATCH}")
    return request


@dataclass
class RotationNode:
    name: str
    pool: str = ""
    uid: str = ""
    state: str = "Pending"
    """Pending, Draining, Drained, Removed or Replaced."""
    replacement: str = ""
    version: str = ""
    since: float | None = None
    started: float | None = None
    """When its cordon came (what the time per node counts from)."""
    affected: list[str] = field(default_factory=list)
    """``Kind/namespace/name`` of the workloads whose pods it moved (waited for)."""


@dataclass
class Rotation:
    id: str
    requested_by: str
    batch: int
    pause: float
    pool: str = ""
    phase: str = "Running"
    message: str = ""
    started: float = 0.0
    finished: float | None = None
    next_batch_at: float | None = None
    nodes: list[RotationNode] = field(default_factory=list)

    @property
    def in_flight(self) -> list[RotationNode]:
        return [n for n in self.nodes if n.state in IN_FLIGHT]

    @property
    def pending(self) -> list[RotationNode]:
        return [n for n in self.nodes if n.state == "Pending"]

    @property
    def left(self) -> int:
        return sum(1 for n in self.nodes if n.state != "Replaced")

    def to_status(self) -> dict[str, Any]:
        def stamp(epoch: float | None) -> str | None:
            return iso_time(epoch) if epoch is not None else None

        doc: dict[str, Any] = {
            "id": self.id, "requestedBy": self.requested_by, "phase": self.phase,
            "message": self.message[:2000], "pool": self.pool, "batch": self.batch,
            "pauseSeconds": int(self.pause), "started": stamp(self.started),
            "finished": stamp(self.finished), "nextBatchAt": stamp(self.next_batch_at),
            "nodes": [_present({
                "name": n.name, "pool": n.pool, "uid": n.uid, "state": n.state,
                "replacement": n.replacement, "version": n.version, "since": stamp(n.since),
                "startedAt": stamp(n.started), "affected": n.affected[:50]})
                for n in self.nodes]}
        return _present(doc)


def _present(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` without its None values (the status schema has no nullable field)."""
    return {k: v for k, v in doc.items() if v is not None}


def from_status(doc: Mapping[str, Any] | None) -> Rotation | None:
    """The rotation a Cluster's ``status.rotation`` holds (None: none, or unreadable)."""
    if not doc or not doc.get("id"):
        return None
    try:
        nodes = [RotationNode(
            name=str(n["name"]), pool=str(n.get("pool") or ""), uid=str(n.get("uid") or ""),
            state=str(n.get("state") or "Pending"),
            replacement=str(n.get("replacement") or ""), version=str(n.get("version") or ""),
            since=parse_time(n.get("since")), started=parse_time(n.get("startedAt")),
            affected=[str(a) for a in n.get("affected") or []])
            for n in doc.get("nodes") or []]
        return Rotation(id=str(doc["id"]), requested_by=str(doc.get("requestedBy") or ""),
                        batch=int(doc.get("batch") or 1),
                        pause=float(doc.get("pauseSeconds") or 0),
                        pool=str(doc.get("pool") or ""), phase=str(doc.get("phase") or ""),
                        message=str(doc.get("message") or ""),
                        started=parse_time(doc.get("started")) or 0.0,
                        finished=parse_time(doc.get("finished")),
                        next_batch_at=parse_time(doc.get("nextBatchAt")), nodes=nodes)
    except (TypeError, ValueError, KeyError):
        return None


def ordered(nodes: Sequence[NodeView], pools: Sequence[str], pool: str = ""
            ) -> list[NodeView]:
    """The nodes to rotate, in the policy's pool order (pools not listed last), by name
    within a pool; only ``pool``'s when given."""
    rank = {name: i for i, name in enumerate(pools)}
    chosen = [n for n in nodes if not pool or n.pool == pool]
    return sorted(chosen, key=lambda n: (rank.get(n.pool, len(rank)), n.pool, n.name))


def start(request: Request, policy: RotationPolicy, nodes: Sequence[NodeView],
          now: float) -> Rotation:
    """A new rotation of ``nodes`` for ``request`` (its batch and pause win over the
    policy's)."""
    batch = request.batch or policy.batch
    pause = duration_seconds(request.pause or policy.pause)
    order = ordered(nodes, policy.pools, request.pool)
    rotation = Rotation(id=request.id, requested_by=request.by, batch=batch, pause=pause,
                        pool=request.pool, started=now,
                        nodes=[RotationNode(n.name, n.pool, n.uid, since=now) for n in order])
    if not order:
        rotation.phase, rotation.finished = "Complete", now
        rotation.message = f"no node to rotate{' in pool ' + request.pool if request.pool else ''}"
    return rotation


def window(policy: RotationPolicy, now: float) -> str | None:
    """None when a batch may start now (a window is open, or the policy has none); else
    when the next window opens, for people."""
    if not policy.windows:
        return None
    from reconciler.scaling.schedules import Schedule, evaluate

    schedules = [Schedule(w.cron, w.timezone, timedelta(seconds=duration_seconds(w.duration)),
                          1) for w in policy.windows]
    floor = evaluate(schedules, 0, datetime.fromtimestamp(now, UTC))
    if floor.floor >= 1:
        return None
    opens = floor.next_change
    return (f"outside the rotation windows; the next opens at {iso_time(opens.timestamp())}"
            if opens else "outside the rotation windows; none opens again")


def replacements(rotation: Rotation, nodes: Sequence[NodeView]) -> list[tuple[str, NodeView]]:
    """For each removed node (oldest first), the new node that replaces it: Ready, in its
    pool, created since the rotation started, not one of the rotation's own nodes and not
    already a replacement."""
    planned = {n.name for n in rotation.nodes} | {n.uid for n in rotation.nodes}
    taken = {n.replacement for n in rotation.nodes if n.replacement}
    fresh = sorted((n for n in nodes if n.name not in planned and n.uid not in planned
                    and n.name not in taken and n.ready and not n.unschedulable
                    and (n.created or 0.0) >= rotation.started - 1.0),
                   key=lambda n: (n.created or 0.0, n.name))
    found = []
    for removed in sorted((n for n in rotation.nodes if n.state == "Removed"),
                          key=lambda n: (n.since or 0.0, n.name)):
        match = next((n for n in fresh if n.pool == removed.pool), None)
        if match is not None:
            fresh.remove(match)
            found.append((removed.name, match))
    return found


def replaced(node: RotationNode, new: NodeView, now: float) -> RotationNode:
    return replace(node, state="Replaced", replacement=new.name,
                   version=new.labels.get(POOL_VERSION_LABEL, ""), since=now)
