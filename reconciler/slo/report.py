"""Each SLO's state from the SLI samples in the insight store: its current value over its
window, the error budget left and how fast it burns (pure; ``pincompile slo``,
``/api/v1/slos`` and the console show it).

With ``budget = 1 - objective``: the value is ``good / events`` over the window; the
budget left is ``1 - (bad / events) / budget`` (1 untouched, 0 spent, below 0 overspent);
the burn rate over a shorter window ``w`` is ``(bad_w / events_w) / budget`` (1 spends the
budget exactly in the SLO's window; the SRE workbook pages at 14.4 over 1 h).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pincompile.contract import Objective
from reconciler.slo.sli import buckets_for
from reconciler.store.verification import SLISample

BURN_WINDOWS: tuple[tuple[str, float], ...] = (("1h", 3600.0), ("6h", 6 * 3600.0),
                                               ("3d", 3 * 86400.0))
BREAKDOWN = {"api-availability": "group", "launch-latency": "cluster",
             "reconcile-latency": "cluster"}
"""The label each SLO is also shown per value of."""


@dataclass
class Part:
    """One value of the breakdown label: its events and state over the window and 1 h."""

    key: str
    events: int
    value: float | None
    burn_1h: float | None


@dataclass
class SLOState:
    """One SLO now."""

    objective: Objective
    events: int = 0
    bad: int = 0
    value: float | None = None
    """Percent of good events over the window (None: no events)."""
    budget_left: float | None = None
    burn: dict[str, float | None] = field(default_factory=dict)
    parts: list[Part] = field(default_factory=list)

    @property
    def met(self) -> bool | None:
        return None if self.value is None else self.value >= self.objective.objective

    def document(self) -> dict[str, Any]:
        o = self.objective
        return {"name": o.name, "sli": o.sli, "objective": o.objective, "window": o.window,
                "threshold": o.threshold, "description": o.description,
                "events": self.events, "bad": self.bad, "value": _round(self.value),
                "met": self.met, "budgetLeft": _round(self.budget_left),
                "burnRates": {k: _round(v) for k, v in self.burn.items()},
                "by": BREAKDOWN.get(o.sli),
                "parts": [{"key": p.key, "events": p.events, "value": _round(p.value),
                           "burn1h": _round(p.burn_1h)} for p in self.parts]}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6) + 0.0  # never -0.0


def counts(objective: Objective, samples: Iterable[SLISample], since: datetime
           ) -> tuple[int, int]:
    """(events, bad) of the SLO's samples from ``since`` on."""
    bounds = buckets_for(objective.sli)
    threshold = objective.threshold_seconds
    events = bad = 0
    for sample in samples:
        if sample.at >= since and counted(objective, sample):
            events += sample.total
            bad += sample.total - sample.good(threshold, bounds)
    return events, bad


def counted(objective: Objective, sample: SLISample) -> bool:
    """Whether the sample's events are the SLO's (its tier, its route groups)."""
    if objective.sli == "launch-latency":
        return sample.label("tier") == objective.tier
    if objective.sli == "api-availability":
        return sample.label("group") in objective.routes
    return True


def evaluate(objective: Objective, samples: Sequence[SLISample], now: datetime) -> SLOState:
    """The SLO's state at ``now`` from its SLI's samples."""
    state = SLOState(objective)
    start = now - timedelta(seconds=objective.window_seconds)
    state.events, state.bad = counts(objective, samples, start)
    if state.events:
        ratio = state.bad / state.events
        state.value = 100.0 * (1 - ratio)
        state.budget_left = 1 - ratio / objective.budget
    for name, seconds in BURN_WINDOWS:
        state.burn[name] = burn_rate(objective, samples, now - timedelta(seconds=seconds))
    label = BREAKDOWN.get(objective.sli)
    if label is not None:
        keys = sorted({s.label(label) or "" for s in samples if counted(objective, s)})
        for key in keys:
            mine = [s for s in samples if s.label(label) == key]
            events, bad = counts(objective, mine, start)
            state.parts.append(Part(key, events, 100.0 * (1 - bad / events) if events
                                    else None,
                                    burn_rate(objective, mine, now - timedelta(hours=1))))
    return state


def burn_rate(objective: Objective, samples: Sequence[SLISample], since: datetime
              ) -> float | None:
    """How fast the budget burns from ``since`` on (None: no events then)."""
    events, bad = counts(objective, samples, since)
    return None if not events else (bad / events) / objective.budget
