"""A forecast that says how it was made: a straight-line trend plus a repeating week
(or day), fitted by least squares to a series of hourly means, and the first time the
forecast crosses a limit (a project's quota, a cluster's allocatable).

The model: ``y(t) = a + b·t + s(slot(t))`` where ``slot`` is the hour of the week when the
series spans two weeks or more, the hour of the day when it spans two days or more, and
nothing otherwise; ``s`` is the mean of the detrended values in each slot (centred on
zero), and the trend is fitted again to the values without it, in turn until it settles.
Nothing else: no hidden state, every number of the fit is reported (:class:`Fit`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

HOUR, DAY, WEEK = 3600.0, 86400.0, 7 * 86400.0
MIN_POINTS = 3
"""Fewer points than this fit no trend."""
BACKFIT_ROUNDS = 50
"""Trend and seasonality are fitted in turn until the trend stops moving (backfitting:
the joint least-squares fit of both), at most this many rounds."""


@dataclass(frozen=True)
class Fit:
    """A fitted series: ``value(t)`` forecasts it."""

    intercept: float
    """At ``origin``."""
    slope: float
    """Per second."""
    origin: float
    period: float | None
    """The seasonality's period (``WEEK``, ``DAY``) or None."""
    seasonal: tuple[float, ...] = ()
    """Per slot (hour) of the period."""
    points: int = 0
    residual_std: float = 0.0
    r2: float | None = None
    last: float = 0.0
    """The time of the last point."""

    def value(self, t: float) -> float:
        base = self.intercept + self.slope * (t - self.origin)
        return base + (self.seasonal[_slot(t, self.period)] if self.period else 0.0)

    @property
    def seasonality(self) -> str:
        return {WEEK: "weekly", DAY: "daily"}.get(self.period or 0.0, "none")

    def explain(self) -> dict[str, object]:
        return {"points": self.points, "trendPerDay": _round(self.slope * DAY),
                "seasonality": self.seasonality,
                "seasonalAmplitude": _round((max(self.seasonal) - min(self.seasonal)) / 2
                                            if self.seasonal else 0.0),
                "residualStd": _round(self.residual_std),
                "r2": None if self.r2 is None else round(self.r2, 4)}


def _round(value: float) -> float:
    return float(f"{value:.6g}")


def _slot(t: float, period: float | None) -> int:
    return int((t % period) // HOUR) if period else 0


def _line(ts: Sequence[float], ys: Sequence[float], origin: float) -> tuple[float, float]:
    """Least-squares intercept (at ``origin``) and slope."""
    n = len(ts)
    xs = [t - origin for t in ts]
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0
    return my - slope * mx, slope


def _seasonal(ts: Sequence[float], ys: Sequence[float], origin: float, intercept: float,
              slope: float, period: float) -> tuple[float, ...]:
    """The mean detrended value of each slot of the period, centred on zero (a slot with
    no point: 0)."""
    slots = int(period // HOUR)
    sums, counts = [0.0] * slots, [0] * slots
    for t, y in zip(ts, ys, strict=True):
        sums[_slot(t, period)] += y - (intercept + slope * (t - origin))
        counts[_slot(t, period)] += 1
    means = [s / c if c else 0.0 for s, c in zip(sums, counts, strict=True)]
    seen = [m for m, c in zip(means, counts, strict=True) if c]
    centre = sum(seen) / len(seen)
    return tuple(m - centre if c else 0.0 for m, c in zip(means, counts, strict=True))


def fit(points: Sequence[tuple[float, float]]) -> Fit | None:
    """The model fitted to ``points`` ((time, value), any order); None with fewer than
    :data:`MIN_POINTS`."""
    if len(points) < MIN_POINTS:
        return None
    ordered = sorted(points)
    ts, ys = [t for t, _ in ordered], [y for _, y in ordered]
    origin, span = ts[-1], ts[-1] - ts[0]
    period = WEEK if span >= 2 * WEEK else DAY if span >= 2 * DAY else None
    intercept, slope = _line(ts, ys, origin)
    seasonal: tuple[float, ...] = ()
    for _ in range(BACKFIT_ROUNDS if period is not None else 0):
        assert period is not None
        seasonal = _seasonal(ts, ys, origin, intercept, slope, period)
        again = _line(ts, [y - seasonal[_slot(t, period)] for t, y in zip(ts, ys, strict=True)],
                      origin)
        done = abs(again[1] - slope) <= 1e-12 * max(1.0, abs(slope))
        intercept, slope = again
        if done:
            break
    model = Fit(intercept, slope, origin, period, seasonal, len(ts), last=ts[-1])
    residuals = [y - model.value(t) for t, y in zip(ts, ys, strict=True)]
    mean = sum(ys) / len(ys)
    total = sum((y - mean) ** 2 for y in ys)
    return Fit(intercept, slope, origin, period, seasonal, len(ts),
               math.sqrt(sum(r * r for r in residuals) / len(ts)),
               1 - sum(r * r for r in residuals) / total if total > 0 else None, ts[-1])


@dataclass(frozen=True)
class RunOut:
    """When the forecast first exceeds ``limit``: ``at`` (None: not within the horizon),
    or ``already`` when the last point is over it."""

    limit: float
    at: float | None = None
    already: bool = False


def runs_out(model: Fit, limit: float, last_value: float, horizon: float,
             step: float = HOUR) -> RunOut:
    """The first hour after the last point at which ``model`` exceeds ``limit``."""
    if last_value > limit:
        return RunOut(limit, model.last, already=True)
    t = model.last + step
    while t <= model.last + horizon:
        if model.value(t) > limit:
            return RunOut(limit, t)
        t += step
    return RunOut(limit)


@dataclass
class Forecast:
    """One series' fit, its forecast (one value a day) and when it crosses its limit."""

    fit: Fit
    daily: list[tuple[float, float]] = field(default_factory=list)
    run_out: RunOut | None = None


def forecast(points: Sequence[tuple[float, float]], limit: float | None,
             horizon: float = 90 * DAY) -> Forecast | None:
    """Fit ``points`` and forecast them ``horizon`` seconds past the last one."""
    model = fit(points)
    if model is None:
        return None
    days = int(horizon // DAY)
    daily = [(model.last + DAY * (i + 1), model.value(model.last + DAY * (i + 1)))
             for i in range(days)]
    last_value = max(points)[1]
    return Forecast(model, daily, None if limit is None else runs_out(
        model, limit, last_value, horizon))
