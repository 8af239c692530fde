"""A member cluster's canary probes over the last hours as a small inline SVG (no script):
the launch seconds of each probe that launched, as a line, and a mark on top for each
probe that failed. Drawn on the scaling chart's frame (:mod:`reconciler.console.chart`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from reconciler.console.chart import BOTTOM, HEIGHT, LEFT, RIGHT, TOP, WIDTH, Tick
from reconciler.store.verification import ProbeRecord

HOURS = 6
SCALES = (1, 2, 4, 8, 12, 20, 40, 60, 120, 240, 600, 1200)
"""Tops of the y axis (seconds): a quarter of each is a short label."""


@dataclass(frozen=True)
class ProbeChart:
    cluster: str
    points: str
    """``x,y`` of each launch, oldest first, for a ``<polyline>``."""
    launches: list[tuple[float, float]]
    """The same points, each marked (a lone probe draws no line)."""
    failures: list[float]
    """x of each failed probe."""
    x_ticks: list[Tick]
    y_ticks: list[Tick]
    probes: int
    failed: int
    last: ProbeRecord
    hours: int = HOURS
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    top: int = TOP
    bottom: float = HEIGHT - BOTTOM
    right: float = WIDTH - RIGHT


def probe_chart(cluster: str, probes: Sequence[ProbeRecord], now: datetime,
                hours: int = HOURS) -> ProbeChart | None:
    """The chart of one cluster's ``probes`` (oldest first) over the ``hours`` before
    ``now``; None without a probe in that time."""
    start = now - timedelta(hours=hours)
    shown = [p for p in probes if p.cluster == cluster and start <= p.started <= now]
    if not shown:
        return None
    slowest = max(p.launch_seconds or 0.0 for p in shown)
    top = next((s for s in SCALES if s >= slowest), SCALES[-1])
    span = (now - start).total_seconds()

    def x(when: datetime) -> float:
        return round(LEFT + (WIDTH - LEFT - RIGHT) * (when - start).total_seconds() / span, 1)

    def y(value: float) -> float:
        return round(TOP + (HEIGHT - TOP - BOTTOM) * (1 - min(value, top) / top), 1)

    launched = [(x(p.started), y(p.launch_seconds)) for p in shown
                if p.launch_seconds is not None]
    step = top / 4
    return ProbeChart(
        cluster=cluster, points=" ".join(f"{a},{b}" for a, b in launched),
        launches=launched, failures=[x(p.started) for p in shown if not p.ok],
        x_ticks=[Tick(x(start + timedelta(hours=h)),
                      (start + timedelta(hours=h)).strftime("%H:%M")) for h in range(hours + 1)],
        y_ticks=[Tick(y(step * i), f"{step * i:g}s") for i in range(5)],
        probes=len(shown), failed=sum(not p.ok for p in shown), last=shown[-1])
