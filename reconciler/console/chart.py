"""A PinScaler's scaling chart: its desired and ready replicas and its floor over the last
hours, from the store's samples, as step lines for an inline SVG (no chart library, no
script). Each value holds from its sample until the next one, the last until now."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from reconciler.store import ScaleSample

HOURS = 6
WIDTH, HEIGHT = 640, 200
LEFT, RIGHT, TOP, BOTTOM = 40, 10, 10, 24
"""Margins for the axes' labels (SVG user units)."""
SERIES = (("desired", "Desired"), ("ready", "Ready"), ("floor", "Floor"))


@dataclass(frozen=True)
class Line:
    name: str
    label: str
    points: str
    """``x,y x,y ...`` for a ``<polyline>``."""
    last: int


@dataclass(frozen=True)
class Tick:
    position: float
    label: str


@dataclass(frozen=True)
class Chart:
    lines: list[Line]
    x_ticks: list[Tick]
    y_ticks: list[Tick]
    samples: int
    hours: int
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    bottom: float = HEIGHT - BOTTOM
    right: float = WIDTH - RIGHT


def scaling_chart(samples: Sequence[ScaleSample], now: datetime,
                  hours: int = HOURS) -> Chart | None:
    """The chart of ``samples`` (oldest first) over the ``hours`` before ``now``; None
    when there is no sample in that time."""
    start = now - timedelta(hours=hours)
    shown = [s for s in samples if start <= s.at <= now]
    if not shown:
        return None
    top = max(1, *(max(s.desired, s.ready, s.floor) for s in shown))
    span = (now - start).total_seconds()

    def x(when: datetime) -> float:
        return round(LEFT + (WIDTH - LEFT - RIGHT) * (when - start).total_seconds() / span, 1)

    def y(value: int) -> float:
        return round(TOP + (HEIGHT - TOP - BOTTOM) * (1 - value / top), 1)

    lines = []
    for field, label in SERIES:
        points: list[str] = []
        for i, sample in enumerate(shown):
            value = getattr(sample, field)
            if i:
                points.append(f"{x(sample.at)},{y(getattr(shown[i - 1], field))}")
            points.append(f"{x(sample.at)},{y(value)}")
        points.append(f"{x(now)},{y(getattr(shown[-1], field))}")
        lines.append(Line(field, label, " ".join(points), getattr(shown[-1], field)))
    x_ticks = [Tick(x(start + timedelta(hours=h)),
                    (start + timedelta(hours=h)).strftime("%H:%M")) for h in range(hours + 1)]
    step = max(1, -(-top // 4))
    y_ticks = [Tick(y(v), str(v)) for v in range(0, top + 1, step)]
    return Chart(lines=lines, x_ticks=x_ticks, y_ticks=y_ticks, samples=len(shown),
                 hours=hours)
