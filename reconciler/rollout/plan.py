"""Zone-by-zone rollout of a new pod template across an app's member clusters.

A new template goes to the clusters of one zone; the next zone starts only when every
Deployment there has observed the new generation and is fully updated and available. A
zone that is not there within the app's health timeout halts the rollout: later zones
keep the old template, and the halt is recorded. The state lives in the host cluster (the
app's ``status.rollout``), so a reconciler that restarts continues where it stopped; the
same target never pushes past a halt, and a new target starts again from the first zone.
"""

from __future__ import annotations

import copy
import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pincompile.contract import duration_seconds
from reconciler.clock import iso_time, parse_time
from reconciler.model import Obj

STRATEGY_ANNOTATION = "pincompute.io/rollout-strategy"
HEALTH_TIMEOUT_ANNOTATION = "pincompute.io/health-timeout"
TEMPLATE_HASH_ANNOTATION = "pincompute.io/template-hash"
ZONE_BY_ZONE = "zone-by-zone"

PROGRESSING, HALTED, COMPLETE = "Progressing", "Halted", "Complete"


def template_hash(deployment: Obj) -> str:
    """A short, stable digest of a desired Deployment's pod template."""
    blob = json.dumps(deployment["spec"]["template"], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def stamp(deployment: Obj) -> Obj:
    """The Deployment with its template's digest as an annotation (on the Deployment, not
    the template, so the digest itself never restarts a pod)."""
    out = copy.deepcopy(deployment)
    out["metadata"].setdefault("annotations", {})[TEMPLATE_HASH_ANNOTATION] = \
        template_hash(deployment)
    return out


def is_zone_by_zone(obj: Obj) -> bool:
    annotations = obj["metadata"].get("annotations") or {}
    return obj["kind"] == "Deployment" and annotations.get(STRATEGY_ANNOTATION) == ZONE_BY_ZONE


def health_timeout(obj: Obj) -> float:
    annotations = obj["metadata"].get("annotations") or {}
    return duration_seconds(annotations.get(HEALTH_TIMEOUT_ANNOTATION, "10m"))


@dataclass
class State:
    """Where one app's rollout stands (stored as the app's ``status.rollout``)."""

    target: str
    revision: str
    zones: list[str]
    zone: int = 0
    """Index into ``zones`` of the zone being rolled out (== len(zones) when complete)."""
    phase: str = PROGRESSING
    message: str = ""
    since: float = field(default_factory=time.time)
    """When the current zone started (epoch seconds)."""
    paused_by: str = ""
    """Who paused the rollout, while it waits at a healthy zone (see :mod:`.pause`)."""

    def to_json(self) -> dict[str, Any]:
        current = self.zones[self.zone] if self.zone < len(self.zones) else ""
        return {"target": self.target, "revision": self.revision, "zones": self.zones,
                "zoneIndex": self.zone, "zone": current, "phase": self.phase,
                "message": self.message, "since": iso_time(self.since),
                **({"pausedBy": self.paused_by} if self.paused_by else {})}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> State | None:
        if not data or "target" not in data:
            return None
        return cls(target=str(data["target"]), revision=str(data.get("revision", "")),
                   zones=list(data.get("zones") or []), zone=int(data.get("zoneIndex", 0)),
                   phase=str(data.get("phase", PROGRESSING)),
                   message=str(data.get("message", "")), since=_since(data.get("since")),
                   paused_by=str(data.get("pausedBy") or ""))


@dataclass
class AppRollout:
    """One zone-by-zone app in one pass: its Deployments per cluster and its state."""

    app: tuple[str, str, str]
    desired: dict[str, Obj]
    """cluster → desired Deployment (stamped with its template digest)."""
    zone_of: dict[str, str]
    state: State
    timeout: float
    started_new: bool = False
    paused_by: str | None = None
    """Who paused it (the app resource's annotation): no zone is promoted meanwhile."""

    def clusters_in(self, zone: str) -> list[str]:
        return sorted(c for c in self.desired if self.zone_of[c] == zone)

    def allowed(self, cluster: str) -> bool:
        """Whether this cluster may get the new template now."""
        if self.state.phase == COMPLETE:
            return True
        return self.state.zones.index(self.zone_of[cluster]) <= self.state.zone


def begin(app: tuple[str, str, str], desired: dict[str, Obj], zone_of: Mapping[str, str],
          live: Mapping[str, Obj | None], stored: State | None, revision: str,
          paused_by: str | None = None) -> AppRollout:
    """Decide where an app's rollout stands before this pass applies anything
    (``paused_by``: who paused it, if anyone)."""
    stamped = {c: stamp(d) for c, d in desired.items()}
    digests = {c: template_hash(d) for c, d in desired.items()}
    target = hashlib.sha256(json.dumps(sorted(digests.items())).encode()).hexdigest()[:16]
    zones = sorted({zone_of[c] for c in desired})
    timeout = max(health_timeout(d) for d in desired.values())
    rollout = AppRollout(app, stamped, dict(zone_of), stored or State(target, revision, zones),
                         timeout, paused_by=paused_by)
    if stored is not None and stored.target == target and stored.zones == zones:
        return rollout
    changing = [c for c, obj in live.items() if obj is not None and
                ((obj["metadata"].get("annotations") or {}).get(TEMPLATE_HASH_ANNOTATION)
                 != digests[c])]
    rollout.state = State(target, revision, zones)
    rollout.started_new = True
    if not changing:  # first deployment, or nothing to roll: no gates
        rollout.state.zone, rollout.state.phase = len(zones), COMPLETE
    return rollout


def hold(desired: Obj, live: Obj) -> Obj:
    """``desired`` with the live template (and digest) kept: a later zone waits."""
    out = copy.deepcopy(desired)
    out["spec"]["template"] = copy.deepcopy(live["spec"]["template"])
    digest = (live["metadata"].get("annotations") or {}).get(TEMPLATE_HASH_ANNOTATION)
    annotations = out["metadata"].setdefault("annotations", {})
    if digest:
        annotations[TEMPLATE_HASH_ANNOTATION] = digest
    else:
        annotations.pop(TEMPLATE_HASH_ANNOTATION, None)
    return out


def rolled_out(live: Obj | None) -> tuple[bool, str]:
    """Whether a Deployment has observed its generation and is fully updated and available;
    if not, why."""
    if live is None:
        return False, "the Deployment is missing"
    spec, status = live.get("spec") or {}, live.get("status") or {}
    want = int(spec.get("replicas", 1))
    generation = int(live["metadata"].get("generation", 0))
    if int(status.get("observedGeneration", 0)) < generation:
        return False, "the new generation is not observed yet"
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Progressing" and \
                condition.get("reason") == "ProgressDeadlineExceeded":
            return False, str(condition.get("message", "progress deadline exceeded"))
    updated = int(status.get("updatedReplicas", 0))
    available = int(status.get("availableReplicas", 0))
    total = int(status.get("replicas", 0))
    if updated < want:
        return False, f"{updated}/{want} pods updated"
    if total > updated:
        return False, f"{total - updated} old pods still running"
    if available < want:
        return False, f"{available}/{want} updated pods available"
    return True, ""


def advance(rollout: AppRollout, *, apply: Callable[[str, Obj], None],
            fetch: Callable[[str, Obj], Obj | None], record: Callable[[str, str], None],
            save: Callable[[State], None], poll: float = 1.0,
            clock: Callable[[], float] = time.time,
            sleep: Callable[[float], None] = time.sleep) -> State:
    """Gate the current zone and promote zone by zone until complete or halted.

    ``apply(cluster, obj)`` writes a Deployment, ``fetch(cluster, obj)`` reads it,
    ``record(reason, message)`` emits an Event, ``save(state)`` stores the state.
    """
    state = rollout.state
    while state.phase == PROGRESSING and state.zone < len(state.zones):
        zone = state.zones[state.zone]
        clusters = rollout.clusters_in(zone)
        deadline = state.since + rollout.timeout
        waiting = ""
        while True:
            waiting = ""
            for cluster in clusters:
                ok, why = rolled_out(fetch(cluster, rollout.desired[cluster]))
                if not ok:
                    waiting = f"{cluster}: {why}"
                    break
            if not waiting or clock() >= deadline:
                break
            sleep(poll)
        if waiting:
            state.phase = HALTED
            state.message = (f"zone {zone} not healthy within {rollout.timeout:.0f}s "
                             f"({waiting}); later zones keep the old template")
            record("RolloutHalted", f"revision {state.revision}: {state.message}")
            save(state)
            return state
        if state.zone + 1 < len(state.zones) and not _may_promote(rollout, zone, record,
                                                                   save):
            return state
        state.zone += 1
        state.since = clock()
        if state.zone >= len(state.zones):
            state.phase, state.message = COMPLETE, ""
            record("RolloutComplete", f"revision {state.revision}: every zone updated")
            save(state)
            return state
        following = state.zones[state.zone]
        record("ZonePromoted", f"revision {state.revision}: zone {zone} healthy; "
                               f"rolling out to zone {following}")
        for cluster in rollout.clusters_in(following):
            apply(cluster, rollout.desired[cluster])
        save(state)
    return state


def _may_promote(rollout: AppRollout, zone: str, record: Callable[[str, str], None],
                 save: Callable[[State], None]) -> bool:
    """Whether the next zone may start: not while paused. A pause or a resume is
    recorded once (the state remembers who paused)."""
    state = rollout.state
    following = state.zones[state.zone + 1]
    if rollout.paused_by:
        if state.paused_by != rollout.paused_by:
            state.paused_by = rollout.paused_by
            state.message = (f"paused by {rollout.paused_by}: zone {zone} is healthy; "
                             f"zone {following} waits for `rollout resume`")
            record("RolloutPaused", f"revision {state.revision}: {state.message}")
            save(state)
        return False
    if state.paused_by:
        record("RolloutResumed", f"revision {state.revision}: paused by {state.paused_by}, "
                                 f"resumed: rolling out to zone {following}")
        state.paused_by, state.message = "", ""
    return True


def _since(text: Any) -> float:
    """A stored ``since``; a stamp that cannot be read counts from now."""
    since = parse_time(text)
    return time.time() if since is None else since
