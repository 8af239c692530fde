"""Federation-level rebalancing of a PinScaler's HPA bounds across its member clusters.

The compiler divides a PinScaler's ``minReplicas``/``maxReplicas`` over the clusters its
app runs in; each cluster's HPA then scales within its share. When one cluster's HPA sits
at its ``maxReplicas`` and wants more (its ScalingLimited condition says
TooManyReplicas; an HPA whose metrics never computed reports no such condition, and
then running at a maximum no rebalance lowered counts) while the app's other clusters
have room (their HPAs run fewer than their maximum), the next pass moves ``maxReplicas``
share from the roomy clusters to the busy one: at most one step per pass (25% of the
scaler's ``maxReplicas`` by default, at least 1), never past what the busy cluster's
capacity holds of the app's pods, never below what a donor runs now or its
``minReplicas``. The per-cluster maxima always add up to the scaler's ``maxReplicas``
(minima are not moved), so the global bounds hold.

Pure: the engine reads live HPAs, keeps the moved bounds in the PinScaler's
``status.rebalance`` on the host and writes the HPAs.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reconciler.model import Obj

DEFAULT_STEP_PERCENT = 25


@dataclass(frozen=True)
class Bounds:
    """One cluster's HPA bounds."""

    min: int
    max: int


@dataclass(frozen=True)
class Observed:
    """What one cluster's live HPA reports."""

    current: int
    maximum: int
    """The ``maxReplicas`` it is running with."""
    limited: bool | None = None
    """Its ScalingLimited condition: True when it wants more than its maximum; None when
    the HPA reports no such condition (its metrics never computed)."""

    @property
    def at_max(self) -> bool:
        return self.maximum > 0 and self.current >= self.maximum

    def busy(self, bounds: Bounds, compiled_max: int) -> bool:
        """Runs at its maximum and wants more: ScalingLimited says so or, without that
        condition, its maximum is not one a rebalance lowered to what it runs."""
        if not self.at_max:
            return False
        if self.limited is not None:
            return self.limited
        return bounds.max >= compiled_max


def observe(hpa: Obj | None) -> Observed | None:
    """A live HPA's current replicas and bounds (None before the controller reported)."""
    if hpa is None:
        return None
    status = hpa.get("status") or {}
    if "currentReplicas" not in status:
        return None
    found = [c for c in status.get("conditions") or [] if c.get("type") == "ScalingLimited"]
    limited = None if not found else (found[0].get("status") == "True"
                                      and found[0].get("reason") == "TooManyReplicas")
    return Observed(int(status["currentReplicas"]),
                    int((hpa.get("spec") or {}).get("maxReplicas", 0)), limited)


def step_for(global_max: int, percent: int = DEFAULT_STEP_PERCENT) -> int:
    """``maxReplicas`` share one pass may move: ``percent`` of the scaler's maximum, >= 1."""
    return max(1, global_max * percent // 100)


@dataclass
class Result:
    bounds: dict[str, Bounds]
    moves: list[str] = field(default_factory=list)
    """Why, in words: one line per (from, to) pair moved."""


def rebalance(bounds: Mapping[str, Bounds], observed: Mapping[str, Observed | None],
              caps: Mapping[str, int | None], step: int,
              compiled: Mapping[str, Bounds] | None = None) -> Result:
    """Move up to ``step`` of ``maxReplicas`` share toward busy clusters.

    ``caps``: pods of the app each cluster's capacity holds (None: not limited);
    ``compiled``: the bounds as compiled (default: ``bounds``)."""
    compiled = compiled or bounds
    new = dict(bounds)
    seen = {c: o for c, o in observed.items() if o is not None and c in bounds}
    busy = sorted(c for c, o in seen.items() if o.busy(bounds[c], compiled[c].max))
    give = {c: bounds[c].max - max(o.current, bounds[c].min, 1) for c, o in seen.items()
            if c not in busy}
    give = {c: g for c, g in give.items() if g > 0}
    room = {c: step if caps.get(c) is None else max(0, int(caps[c] or 0) - bounds[c].max)
            for c in busy}
    budget = min(step, sum(give.values()), sum(room.values()))
    moved: dict[tuple[str, str], int] = {}
    while budget > 0:
        donor = sorted(give, key=lambda c: (-give[c], c))[0]
        taker = sorted((c for c in busy if room[c] > 0), key=lambda c: (new[c].max, c))[0]
        new[donor] = Bounds(new[donor].min, new[donor].max - 1)
        new[taker] = Bounds(new[taker].min, new[taker].max + 1)
        give[donor] -= 1
        room[taker] -= 1
        if give[donor] == 0:
            del give[donor]
        moved[(donor, taker)] = moved.get((donor, taker), 0) + 1
        budget -= 1
    lines = []
    for (donor, taker), n in sorted(moved.items()):
        busy_seen, donor_seen = seen[taker], seen[donor]
        lines.append(f"{taker} ran at its maximum ({busy_seen.current}/{bounds[taker].max}) "
                     f"while {donor} had room ({donor_seen.current}/{bounds[donor].max}): "
                     f"moved {n} of maxReplicas from {donor} to {taker}")
    return Result(new, lines)


# --- the state kept in the PinScaler's status ------------------------------------------

def stored_bounds(state: Mapping[str, Any] | None, compiled: Mapping[str, Bounds]
                  ) -> dict[str, Bounds]:
    """The bounds in force: the stored maxima while they were moved from the same compiled
    division (same clusters, same maxima), else the compiled ones."""
    if not state or state.get("basis") != {c: b.max for c, b in compiled.items()}:
        return dict(compiled)
    maxima = state.get("maxReplicas") or {}
    if set(maxima) != set(compiled) or \
            sum(int(v) for v in maxima.values()) != sum(b.max for b in compiled.values()):
        return dict(compiled)
    return {c: Bounds(min(b.min, int(maxima[c])), int(maxima[c])) for c, b in compiled.items()}


def state_of(compiled: Mapping[str, Bounds], bounds: Mapping[str, Bounds], reason: str,
             since: float | None = None) -> dict[str, Any]:
    """``status.rebalance``: the moved maxima, what they were moved from, and why."""
    return {"maxReplicas": {c: b.max for c, b in sorted(bounds.items())},
            "basis": {c: b.max for c, b in sorted(compiled.items())},
            "reason": reason,
            "since": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                   time.gmtime(since if since is not None else time.time()))}
