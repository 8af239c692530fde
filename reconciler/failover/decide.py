"""Cluster failover: which member clusters are lost, and where their share of each app runs.

A member cluster is *lost* when its spec says ``schedulable: false`` (cordoned) or when it
has not answered for longer than the grace period (``--failover-after``); a cluster that
fails for less (slow, restarting) is only *unreachable*, and nothing moves. The pass then
places the fleet a second time with the lost clusters left out
(``pincompile.contract.place_without``) and every app that ran in a lost cluster
runs from that placement: its replicas appear in the other eligible clusters, within their
capacity and quota; a PinPod with ``failover: false`` stays where it was (gone with its
cluster). Nothing is pruned from a lost cluster: it cannot be reached.

When a lost cluster answers again it is *returning*: each app's share moves back in steps
of at most ``--failback-step`` of the app's replicas per pass, and the extra copies
elsewhere shrink by as much, until the app is where the specs put it. Apps an HPA scales,
and kinds without divisible replicas (PinPods, jobs, daemons), move back in one step; while
a cluster is lost, the other clusters' HPA floors hold the replicas an HPA ran there
(:func:`hold_capacity`).

This module only decides (no I/O; :mod:`reconciler.failover.step` does it). The state
lives in the host cluster: each Cluster resource's ``status.failover``
(:class:`ClusterState`) and each app's ``status.failover`` (:class:`AppMove`), so a
restarted reconciler continues where the last one stopped.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pincompile.contract import ANNOTATION_FAILOVER
from reconciler.clients.read import Key, key_of
from reconciler.clock import iso_time, parse_time
from reconciler.model import AppKey, Obj
from reconciler.plan.cluster_plan import autoscaled
from reconciler.status.document import app_of

REACHABLE, UNREACHABLE, LOST, RETURNING = "Reachable", "Unreachable", "Lost", "Returning"
CORDONED = "cordoned (schedulable: false)"
#: Kinds whose replicas are divided across clusters, and so move back in steps.
STEPPED_KINDS = ("PinApp", "PinterestService")
DEFAULT_GRACE = 300.0
DEFAULT_STEP = "25%"


# --- per cluster ---------------------------------------------------------------------------

@dataclass
class ClusterState:
    """Where one member cluster stands (stored as its Cluster resource's
    ``status.failover`` on the host)."""

    name: str
    phase: str = REACHABLE
    reason: str = ""
    since: float | None = None
    """When the current phase began (epoch seconds)."""
    unreachable_since: float | None = None
    """Start of the current unbroken run of failed passes."""
    steps: int = 0
    """Returning: failback steps taken, this pass's included."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"phase": self.phase}
        if self.reason:
            out["reason"] = self.reason
        if self.since is not None:
            out["since"] = iso_time(self.since)
        if self.unreachable_since is not None:
            out["unreachableSince"] = iso_time(self.unreachable_since)
        if self.phase == RETURNING:
            out["failbackSteps"] = self.steps
        return out

    @classmethod
    def from_json(cls, name: str, data: Mapping[str, Any] | None) -> ClusterState:
        data = data or {}
        return cls(name, phase=str(data.get("phase", REACHABLE)),
                   reason=str(data.get("reason", "")), since=parse_time(data.get("since")),
                   unreachable_since=parse_time(data.get("unreachableSince")),
                   steps=int(data.get("failbackSteps", 0)))


def observe(previous: ClusterState | None, name: str, *, error: str | None, cordoned: bool,
            now: float, grace: float) -> ClusterState:
    """The cluster's state after this pass tried to read it (``error``: why it could not).

    Failures shorter than ``grace`` only make it Unreachable; longer ones, or a cordon in
    the specs, make it Lost. A Lost cluster that answers (and is not cordoned) is
    Returning, and every pass it answers takes one more failback step."""
    state = replace(previous) if previous is not None else ClusterState(name)
    if error is None:
        state.unreachable_since = None
    elif state.unreachable_since is None:
        state.unreachable_since = now
    if cordoned:
        if state.phase != LOST:
            state.phase, state.since, state.steps = LOST, now, 0
        state.reason = CORDONED
        return state
    if error is not None:
        down = now - (state.unreachable_since or now)
        if state.phase == LOST:
            if state.reason == CORDONED:
                state.reason = f"unreachable: {error}"
        elif down >= grace:
            state.phase, state.since, state.steps = LOST, now, 0
            state.reason = f"unreachable for {down:.0f}s (grace {grace:.0f}s): {error}"
        elif state.phase in (REACHABLE, UNREACHABLE):
            state.phase, state.reason = UNREACHABLE, error
            state.since = state.unreachable_since
        return state  # a Returning cluster keeps its phase and steps under the grace
    if state.phase == LOST:
        state.phase, state.since, state.steps = RETURNING, now, 1
        state.reason = "answers again: shares move back"
    elif state.phase == RETURNING:
        state.steps += 1
    elif state.phase == UNREACHABLE:
        state.phase, state.since, state.reason = REACHABLE, now, ""
    return state


# --- failback steps ------------------------------------------------------------------------

def parse_step(text: str) -> str:
    """Check a ``--failback-step``: a percent of the app's replicas (``25%``) or a count."""
    value = str(text).strip()
    try:
        number = float(value[:-1]) if value.endswith("%") else int(value)
    except ValueError:
        raise ValueError(f"'{text}' is not a count or a percent like 25%") from None
    if number <= 0:
        raise ValueError(f"'{text}' must be more than 0")
    return value


def step_of(step: str, replicas: int) -> int:
    """Replicas one failback step moves for an app of ``replicas``: at most ``step`` of
    them, but at least one."""
    if step.endswith("%"):
        return max(1, int(replicas * float(step[:-1]) / 100))
    return max(1, int(step))


def blend(normal: Mapping[str, int], moved: Mapping[str, int], returning: Sequence[str],
          back: int) -> dict[str, int]:
    """Replicas per cluster once ``back`` replicas have returned.

    ``normal``: where the specs put them; ``moved``: the placement without the lost and
    returning clusters. The returning clusters (in name order) get ``back`` of their normal
    share; the other clusters give up as many of their extra copies (largest excess first,
    name breaks ties), so the total stays what ``moved`` holds."""
    counts = {c: n for c, n in moved.items() if c not in returning}
    left = back
    for cluster in sorted(returning):
        counts[cluster] = min(normal.get(cluster, 0), left)
        left -= counts[cluster]
    extra = {c: max(n - normal.get(c, 0), 0) for c, n in counts.items() if c not in returning}
    take = back - left
    while take > 0 and any(extra.values()):
        cluster = sorted(extra, key=lambda c: (-extra[c], c))[0]
        extra[cluster] -= 1
        counts[cluster] -= 1
        take -= 1
    return counts


# --- per app -------------------------------------------------------------------------------

@dataclass
class Capacity:
    """How a scaled app keeps its replicas while clusters are lost: ``carried``, the
    replicas each lost cluster ran when last read; ``floors``, the HPA ``minReplicas`` per
    surviving cluster that hold them (its own replicas then, plus its part of those)."""

    carried: dict[str, int]
    floors: dict[str, int]

    @property
    def total(self) -> int:
        """The replicas the floors hold: the app's replicas before the loss."""
        return sum(self.floors.values())

    def to_json(self) -> dict[str, Any]:
        return {"carried": dict(sorted(self.carried.items())),
                "floors": dict(sorted(self.floors.items()))}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Capacity | None:
        if not isinstance(data, Mapping):
            return None
        try:
            return cls({str(c): int(n) for c, n in (data.get("carried") or {}).items()},
                       {str(c): int(n) for c, n in (data.get("floors") or {}).items()})
        except (TypeError, ValueError, AttributeError):
            return None


def hold_capacity(lost: Mapping[str, int | None], running: Mapping[str, int],
                  bounds: Mapping[str, tuple[int, int]], previous: Capacity | None
                  ) -> Capacity | None:
    """The survivors' floors that keep a scaled app's replicas while ``lost`` clusters are
    gone (``lost``: the replicas each ran when last read, None when never read).

    ``running``: the replicas each survivor runs now; ``bounds``: its HPA's (min, max) in
    the placement without the lost clusters. A survivor's floor is what it runs plus its
    part of the lost replicas (each replica goes first to a survivor below its HPA's
    minimum, then to the one with the fewest; name order breaks ties), and never below that
    minimum. The floors stay as ``previous`` set them while the same clusters are lost (the
    survivors' replicas grow because of them); a newly lost cluster's replicas are added.
    The floors add up to at most the survivors' maxima (the
    PinScaler's maxReplicas)."""
    survivors = sorted(bounds)
    if not lost or not survivors:
        return None
    before = previous.carried if previous is not None else {}
    if previous is not None and set(before) == set(lost) \
            and set(previous.floors) == set(survivors):
        return previous
    carried = {c: before[c] if c in before else (lost[c] or 0) for c in sorted(lost)}
    # the survivors' replicas already hold what earlier lost clusters ran
    fresh = sum(n for c, n in carried.items() if c not in before)
    ceiling = sum(high for _, high in bounds.values())
    floors = {s: min(running.get(s, 0), high) for s, (_, high) in bounds.items()}
    for _ in range(min(fresh, ceiling)):  # one replica at a time, to the fewest first
        fewest = min(survivors, key=lambda s: (floors[s] >= bounds[s][0], floors[s], s))
        floors[fewest] += 1
    floors = {s: max(n, bounds[s][0]) for s, n in floors.items()}
    while sum(floors.values()) > ceiling:
        largest = sorted(survivors, key=lambda s: (-floors[s], s))[0]
        floors[largest] -= 1
    return Capacity(carried, floors)


def with_floor(hpa: Obj, floor: int) -> Obj:
    """An HPA whose ``minReplicas`` is at least ``floor`` (``maxReplicas`` no lower)."""
    spec = hpa["spec"]
    low = max(int(spec.get("minReplicas", 1)), floor)
    high = max(int(spec["maxReplicas"]), low)
    if low == spec.get("minReplicas", 1) and high == spec["maxReplicas"]:
        return hpa
    return {**hpa, "spec": {**spec, "minReplicas": low, "maxReplicas": high}}


@dataclass
class AppMove:
    """What failover did to one app (stored as its ``status.failover``)."""

    phase: str
    """FailedOver, FailingBack or Stranded (a PinPod with ``failover: false``)."""
    clusters: list[str]
    """The lost or returning clusters the app ran in."""
    message: str
    replicas: dict[str, int] = field(default_factory=dict)
    """Replicas per cluster now (apps with divided replicas)."""
    normal: dict[str, int] = field(default_factory=dict)
    """Replicas per cluster where the specs put them."""
    back: int = 0
    to_return: int = 0
    capacity: Capacity | None = None
    """A PinScaler: the survivors' floors holding the lost clusters' replicas."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"phase": self.phase, "clusters": list(self.clusters),
                               "message": self.message}
        if self.replicas or self.normal:
            out["replicas"] = dict(sorted(self.replicas.items()))
            out["normalReplicas"] = dict(sorted(self.normal.items()))
        if self.capacity is not None:
            out["capacity"] = self.capacity.to_json()
        if self.phase == "FailingBack":
            out["failback"] = {"back": self.back, "of": self.to_return}
        return out


@dataclass
class Arrangement:
    """Every member's desired objects once failover is applied, and why."""

    desired: dict[str, list[Obj]]
    moves: dict[AppKey, AppMove] = field(default_factory=dict)
    moved_apps: set[AppKey] = field(default_factory=set)
    """Apps whose objects come (somewhere) from the placement without the lost clusters."""
    pending: set[str] = field(default_factory=set)
    """Returning clusters some app has not fully moved back to yet."""


def excluded(states: Mapping[str, ClusterState]) -> dict[str, str]:
    """Clusters the second placement leaves out (lost and returning), with why."""
    return {c: s.reason or s.phase.lower() for c, s in sorted(states.items())
            if s.phase in (LOST, RETURNING)}


def arrange(normal: Mapping[str, list[Obj]], moved: Mapping[str, list[Obj]],
            states: Mapping[str, ClusterState], step: str) -> Arrangement:
    """Each member's desired objects: ``normal`` (the specs' placement) for apps no lost or
    returning cluster touches; the ``moved`` placement (without them) for the others,
    blended back in steps toward ``normal`` while their clusters return.

    Objects that belong to no app (namespaces, quotas, platform daemons) come from
    ``moved`` in the clusters that take the extra copies, from ``normal`` elsewhere and
    everywhere once the last share is back."""
    lost = {c for c, s in states.items() if s.phase == LOST}
    returning = {c: s for c, s in states.items() if s.phase == RETURNING}
    out = Arrangement({c: [] for c in normal})
    if not lost and not returning:
        out.desired = {c: list(objs) for c, objs in normal.items()}
        return out
    gone = lost | set(returning)
    by_n = {c: _by_app(objs) for c, objs in normal.items()}
    by_f = {c: _by_app(moved.get(c, [])) for c in normal}
    apps = sorted({a for split in (*by_n.values(), *by_f.values()) for a in split
                   if a is not None})
    scaled = {k for objs in (*normal.values(), *moved.values()) for k in autoscaled(objs)}
    for app in apps:
        where_n = sorted(c for c in normal if by_n[c].get(app))
        involved = [c for c in where_n if c in gone]
        if not involved:
            for cluster in where_n:
                out.desired[cluster] += by_n[cluster][app]
            continue
        objs_n = [o for c in where_n for o in by_n[c][app]]
        if _stays_put(objs_n):
            for cluster in where_n:
                out.desired[cluster] += by_n[cluster][app]
            if any(c in lost for c in involved):
                out.moves[app] = AppMove(
                    "Stranded", involved,
                    f"lost with cluster {', '.join(c for c in involved if c in lost)}; "
                    "failover: false, so it is not recreated elsewhere")
            continue
        _place_app(out, app, by_n, by_f, involved, lost, returning, step, scaled)
    # the pass that moves the last share back also shrinks the grown quotas (not the next)
    finished = not lost and not out.pending and all(s.steps > 0 for s in returning.values())
    for cluster in normal:
        source = by_n if cluster in gone or finished else by_f
        out.desired[cluster] += source[cluster].get(None, [])
    return out


def _place_app(out: Arrangement, app: AppKey, by_n: dict[str, dict[AppKey | None, list[Obj]]],
               by_f: dict[str, dict[AppKey | None, list[Obj]]], involved: list[str],
               lost: set[str], returning: Mapping[str, ClusterState], step: str,
               scaled: set[Key]) -> None:
    """One app that ran in a lost or returning cluster (``scaled``: workloads an HPA
    scales)."""
    clusters = sorted(by_n)
    back_in = [c for c in involved if c in returning and returning[c].steps > 0]
    still_lost = [c for c in involved if c in lost]
    n = _replicas({c: by_n[c].get(app, []) for c in clusters}, scaled)
    f = _replicas({c: by_f[c].get(app, []) for c in clusters}, scaled)
    out.moved_apps.add(app)
    if app[0] in STEPPED_KINDS and n is not None and f is not None:
        total = sum(n.values())
        steps = max((returning[c].steps for c in back_in), default=0)
        to_return = sum(n.get(c, 0) for c in back_in)
        back = min(to_return, steps * step_of(step, total))
        counts = blend(n, {c: k for c, k in f.items() if c not in lost}, back_in, back)
        for cluster in clusters:
            if cluster in lost or counts.get(cluster, 0) <= 0:
                continue
            source = by_n if by_n[cluster].get(app) else by_f
            out.desired[cluster] += [_with_replicas(o, counts[cluster])
                                     for o in source[cluster].get(app, [])]
        if back < to_return:
            out.pending.update(back_in)
        move = AppMove("FailedOver", involved, "", {c: k for c, k in counts.items() if k},
                       {c: k for c, k in n.items() if k}, back, to_return)
        if back_in and back < to_return:
            move.phase = "FailingBack"
        elif not still_lost:
            return  # fully back: no story left to tell
        move.message = _story(move, still_lost, back_in, step_of(step, total))
        out.moves[app] = move
        return
    # no divisible replicas (or an HPA owns them): all at once
    for cluster in clusters:
        if cluster in lost:
            continue
        if cluster in back_in or not still_lost:
            out.desired[cluster] += by_n[cluster].get(app, [])
        else:
            out.desired[cluster] += by_f[cluster].get(app, [])
    if still_lost:
        now_in = sorted(c for c in clusters if c not in lost and by_f[c].get(app))
        where = ", ".join(now_in) if now_in else "no other eligible cluster"
        out.moves[app] = AppMove(
            "FailedOver", involved,
            f"cluster {', '.join(still_lost)} lost: runs in {where} instead")


def _story(move: AppMove, still_lost: list[str], back_in: list[str], step: int) -> str:
    now = ", ".join(f"{c}={k}" for c, k in sorted(move.replicas.items()))
    if move.phase == "FailingBack":
        return (f"failing back to {', '.join(back_in)}: {move.back}/{move.to_return} "
                f"replicas back (at most {step} per pass); now {now}")
    return f"cluster {', '.join(still_lost)} lost: its replicas run elsewhere; now {now}"


def _by_app(objs: Iterable[Obj]) -> dict[AppKey | None, list[Obj]]:
    out: dict[AppKey | None, list[Obj]] = defaultdict(list)
    for obj in objs:
        out[app_of(obj)].append(obj)
    return out


def _stays_put(objs: list[Obj]) -> bool:
    """A PinPod that asked not to be recreated elsewhere."""
    return any(o["kind"] == "Pod" and ((o["metadata"].get("annotations") or {})
                                       .get(ANNOTATION_FAILOVER) == "false") for o in objs)


def _replicas(per_cluster: Mapping[str, list[Obj]], scaled: set[Key]) -> dict[str, int] | None:
    """Each cluster's Deployment replicas for an app with one Deployment no HPA scales."""
    out: dict[str, int] = {}
    for cluster, objs in per_cluster.items():
        deployments = [o for o in objs if o["kind"] == "Deployment"]
        if len(deployments) > 1 or any(key_of(d) in scaled for d in deployments):
            return None
        if deployments:
            out[cluster] = int(deployments[0]["spec"].get("replicas", 1))
    return out


def _with_replicas(obj: Obj, replicas: int) -> Obj:
    if obj["kind"] != "Deployment" or obj["spec"].get("replicas") == replicas:
        return obj
    return {**obj, "spec": {**obj["spec"], "replicas": replicas}}
