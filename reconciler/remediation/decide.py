"""What remediation does next in one member cluster: a pure function of its nodes, the
Cluster's policy, the actions of the last hour and the clock (:func:`decide`).

A node is *unhealthy* while any signal of the policy is present on it; a signal that has
held for its ``after`` asks for its action (the strongest one wins: cordon < drain <
terminate). Before anything is done the circuit breaker counts the unhealthy nodes of
the cluster and of each zone (of a cluster with several): more than ``maxUnhealthy`` in
a scope opens its circuit and nothing is done there (not even a drain under way goes
on), because a mass failure is an incident, not a node problem. Then the limits, in
order: at most
``maxActionsPerHour`` actions a cluster in any hour, at most ``maxDrainsPerZone`` drains
under way in a zone. A node that recovered (no signal present) is made schedulable again
when remediation cordoned it; a node a rotation holds is left to the rotation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pincompile.contract import NodeSignal, RemediationPolicy, duration_seconds
from reconciler.clock import iso_time
from reconciler.remediation.nodes import STRENGTH, NodeView

HOUR = 3600.0
DRAINING = ("drain", "terminate")
"""Actions that drain the node (the per-zone limit counts them)."""


@dataclass(frozen=True)
class ActionRecord:
    """One action remediation started (what the hourly limit counts)."""

    node: str
    action: str
    at: float
    reason: str = ""


@dataclass(frozen=True)
class Present:
    """A signal present on a node since ``since`` (epoch seconds)."""

    signal: NodeSignal
    since: float

    def held(self, now: float) -> bool:
        return now - self.since >= duration_seconds(self.signal.after)

    def describe(self, now: float) -> str:
        return f"{self.signal.name} for {_span(now - self.since)} (after {self.signal.after})"


@dataclass(frozen=True)
class Circuit:
    """The circuit breaker of one scope: the cluster (``zone`` None) or one zone."""

    zone: str | None
    unhealthy: int
    nodes: int
    limit: int

    @property
    def open(self) -> bool:
        return self.unhealthy > self.limit

    @property
    def scope(self) -> str:
        return "the cluster" if self.zone is None else f"zone {self.zone or '(none)'}"

    def reason(self) -> str:
        return (f"{self.unhealthy} of {self.nodes} nodes of {self.scope} are unhealthy, "
                f"more than maxUnhealthy allows ({self.limit}): no action there until it "
                "recovers")


@dataclass(frozen=True)
class Start:
    """Start (or escalate to) ``action`` on ``node``."""

    node: str
    zone: str
    action: str
    signal: str
    reason: str
    escalates: str = ""
    """The action under way before, when this one goes further."""


@dataclass(frozen=True)
class Wait:
    """``node`` needs ``action`` but a limit or the circuit holds it back."""

    node: str
    action: str
    reason: str


@dataclass(frozen=True)
class Release:
    """``node`` recovered: drop remediation's mark (and uncordon it when ``uncordon``)."""

    node: str
    uncordon: bool
    reason: str


@dataclass
class Decision:
    circuits: list[Circuit] = field(default_factory=list)
    starts: list[Start] = field(default_factory=list)
    waits: list[Wait] = field(default_factory=list)
    releases: list[Release] = field(default_factory=list)
    frozen: set[str] = field(default_factory=set)
    """Nodes in a scope whose circuit is open: a drain under way there stops."""
    unhealthy: dict[str, list[str]] = field(default_factory=dict)
    """Each unhealthy node's present signals (``Ready=False|Unknown``, ...)."""

    @property
    def open(self) -> list[Circuit]:
        return [c for c in self.circuits if c.open]


def present_signals(node: NodeView, policy: RemediationPolicy, now: float,
                    first_seen: Mapping[tuple[str, str], float]) -> list[Present]:
    """The policy's signals present on ``node``. A condition counts from its
    lastTransitionTime; a missing Ready from the node's creation; an annotation (or a
    condition without a transition time) from ``first_seen[(node, signal name)]``, else
    from ``now``."""
    found: list[Present] = []
    for signal in policy.signals:
        key = (node.name, signal.name)
        if signal.condition is not None:
            status, since = node.conditions.get(signal.condition, (None, None))
            if status is None and signal.condition == "Ready":
                status, since = "Unknown", node.created
            if status not in signal.statuses:
                continue
            found.append(Present(signal, since if since is not None
                                 else first_seen.get(key, now)))
        elif signal.annotation in node.annotations:
            found.append(Present(signal, first_seen.get(key, now)))
    return found


def allowed_unhealthy(max_unhealthy: int | str, nodes: int) -> int:
    """How many unhealthy nodes ``maxUnhealthy`` allows among ``nodes`` (a share is
    rounded down)."""
    if isinstance(max_unhealthy, str) and max_unhealthy.endswith("%"):
        return nodes * int(max_unhealthy[:-1]) // 100
    return int(max_unhealthy)


def decide(nodes: Sequence[NodeView], policy: RemediationPolicy,
           recent: Sequence[ActionRecord], now: float,
           first_seen: Mapping[tuple[str, str], float] | None = None) -> Decision:
    """What to do now in one cluster (see the module's docstring)."""
    seen = first_seen or {}
    present = {n.name: present_signals(n, policy, now, seen) for n in nodes}
    decision = Decision(unhealthy={name: [p.signal.name for p in found]
                                   for name, found in present.items() if found})
    decision.circuits = _circuits(nodes, present, policy)
    open_zones = {c.zone for c in decision.open}
    for node in nodes:
        if None in open_zones or node.zone in open_zones:
            decision.frozen.add(node.name)
    for node in nodes:
        release = _release(node, present[node.name], policy)
        if release is not None:
            decision.releases.append(release)
    limits = _Limits(policy, nodes, recent, now)
    for node, held in _candidates(nodes, present, now):
        want = max((p.signal.action for p in held), key=STRENGTH.__getitem__)
        strongest = next(p for p in held if p.signal.action == want)
        mark = node.mark
        reason = strongest.describe(now)
        if node.name in decision.frozen:
            circuit = next(c for c in decision.open if c.zone in (None, node.zone))
            decision.waits.append(Wait(node.name, want, f"{reason}; {circuit.reason()}"))
            continue
        why_not = limits.why_not(node, want)
        if why_not is not None:
            decision.waits.append(Wait(node.name, want, f"{reason}; {why_not}"))
            continue
        limits.take(node, want)
        decision.starts.append(Start(node.name, node.zone, want, strongest.signal.name,
                                     reason, escalates=mark.action if mark else ""))
    return decision


def _circuits(nodes: Sequence[NodeView], present: Mapping[str, list[Present]],
              policy: RemediationPolicy) -> list[Circuit]:
    most = policy.limits.max_unhealthy
    zones: dict[str, list[NodeView]] = {}
    for node in nodes:
        zones.setdefault(node.zone, []).append(node)
    scopes: list[tuple[str | None, Sequence[NodeView]]] = [(None, nodes)]
    if len(zones) > 1:  # one zone: its circuit is the cluster's
        scopes += sorted(zones.items())
    return [Circuit(zone, sum(1 for n in members if present[n.name]), len(members),
                    allowed_unhealthy(most, len(members)))
            for zone, members in scopes]


def _candidates(nodes: Sequence[NodeView], present: Mapping[str, list[Present]],
                now: float) -> list[tuple[NodeView, list[Present]]]:
    """Nodes a held signal asks to take further than remediation took them, longest
    held first; nodes a rotation holds are left to it."""
    found = []
    for node in nodes:
        held = [p for p in present[node.name] if p.held(now)]
        if not held or node.rotation:
            continue
        want = max((p.signal.action for p in held), key=STRENGTH.__getitem__)
        mark = node.mark
        if STRENGTH[want] > STRENGTH[mark.action if mark else ""]:
            found.append((min(p.since for p in held), node.name, node, held))
    return [(node, held) for _, _, node, held in sorted(found, key=lambda f: f[:2])]


def _release(node: NodeView, present: Sequence[Present], policy: RemediationPolicy
             ) -> Release | None:
    mark = node.mark
    if mark is None or present or mark.action == "terminate" or node.rotation:
        return None  # a node a rotation holds stays cordoned
    uncordon = policy.uncordon and not mark.was_unschedulable and node.unschedulable
    return Release(node.name, uncordon, f"no signal present since {mark.signal} "
                                        f"({mark.action} at {iso_time(mark.at)})")


class _Limits:
    """The hourly and per-zone limits, as this decision uses them up."""

    def __init__(self, policy: RemediationPolicy, nodes: Sequence[NodeView],
                 recent: Sequence[ActionRecord], now: float) -> None:
        self.limits = policy.limits
        self.now = now
        self.hour = sorted(r.at for r in recent if now - HOUR < r.at <= now)
        self.draining: dict[str, list[str]] = {}
        for node in nodes:
            mark = node.mark
            if mark is not None and mark.action in DRAINING and mark.phase == "draining":
                self.draining.setdefault(node.zone, []).append(node.name)

    def why_not(self, node: NodeView, action: str) -> str | None:
        most = self.limits.max_actions_per_hour
        if len(self.hour) >= most:
            again = (f"; the next is possible at {iso_time(self.hour[-most] + HOUR)}"
                     if most else "")
            return (f"{len(self.hour)} actions in the last hour, maxActionsPerHour is "
                    f"{most}{again}")
        mark = node.mark
        already = mark is not None and mark.action in DRAINING
        busy = [n for n in self.draining.get(node.zone, []) if n != node.name]
        if action in DRAINING and not already \
                and len(busy) >= self.limits.max_drains_per_zone:
            return (f"node {', '.join(sorted(busy))} in zone {node.zone or '(none)'} is being "
                    f"drained (at most {self.limits.max_drains_per_zone} drain(s) at a time "
                    "per zone)")
        return None

    def take(self, node: NodeView, action: str) -> None:
        self.hour.append(self.now)
        self.hour.sort()
        if action in DRAINING:
            self.draining.setdefault(node.zone, []).append(node.name)


def _span(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
