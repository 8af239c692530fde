"""Scheduled floors: which PinScaler schedule windows are open at an instant, and the HPA
``minReplicas`` they ask for.

The compiler records each cluster's schedules on its HPA in the annotation
``pincompute.io/scale-schedules`` (JSON: ``cron``, ``timezone``, ``duration`` and this
cluster's share of the floor, ``minReplicas``). The clock is always an argument, so every
answer here is a pure function of the annotation, the HPA's bounds and ``now``.

How a window is placed on the time line:

- A window opens at every time its ``cron`` matches on the wall clock of its ``timezone``
  and lasts ``duration`` on that same wall clock, so ``0 9 * * 1-5`` for ``8h`` is 09:00 to
  17:00 local on every weekday, and ``0 0 * * *`` for ``24h`` is the whole local day even
  when the day has 23 or 25 hours.
- A wall-clock time the clock skips (spring forward) means the moment of the jump: a window
  due at 02:30 on that day opens at 03:00 and still lasts its full duration (as cron runs a
  job of the skipped hour right after the jump). A wall-clock time that occurs twice (fall
  back) means its first occurrence; a window opens once.
- Windows are half-open, ``[start, end)``. While several are open the highest floor wins;
  the result never drops below the HPA's base ``minReplicas`` nor rises above its
  ``maxReplicas``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

from pincompile.contract import ANNOTATION_SCALE_SCHEDULES as ANNOTATION_SCHEDULES
from pincompile.contract import duration_seconds

#: how far ahead ``until`` is looked for
LOOKAHEAD = timedelta(days=8)
#: openings and closings looked at for ``until`` (bounds the work for windows that chain,
#: such as ``*/5 * * * *`` for 10m; a floor that holds past them has ``until`` None)
MAX_EVENTS = 200
#: wider than any UTC offset change, so a scan from the wall clock misses no window
_DST_MARGIN = timedelta(hours=3)
#: a cron fires at most once a minute, and every fire earlier than ``now - _DST_MARGIN`` on
#: the wall clock starts before ``now``: the backwards scan ends within this many steps
_SCAN_LIMIT = 2 * int(_DST_MARGIN.total_seconds()) // 60 + 2
_CACHE_SIZE = 8192
_CACHE: dict[tuple[tuple[Schedule, ...], int, int | None], tuple[datetime, Floor]] = {}
_CACHE_LOCK = threading.Lock()


class ScheduleError(ValueError):
    """The schedules annotation cannot be read (bad JSON, cron, timezone or duration)."""


@dataclass(frozen=True)
class Schedule:
    """One schedule of one HPA: the cluster's floor while a window is open."""

    cron: str
    timezone: str
    duration: timedelta
    min_replicas: int

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)


@dataclass(frozen=True)
class Window:
    """One opening of a schedule, as instants in UTC (``start`` inclusive, ``end`` not)."""

    schedule: Schedule
    start: datetime
    end: datetime

    def is_open(self, now: datetime) -> bool:
        return self.start <= now < self.end


@dataclass(frozen=True)
class Floor:
    """The floor of one HPA at one instant, and what status needs to explain it.

    ``floor`` is the ``minReplicas`` to set; ``active`` the windows open now (at most one
    per schedule: the one opened last); ``until`` when the floor next drops (None when it
    is the base floor, or holds past :data:`LOOKAHEAD` or :data:`MAX_EVENTS`);
    ``next_change`` the first instant after ``now`` at which the answer may change, as a
    schedule's next window opens or its open window closes (evaluate again then; None when
    no window ever opens again).
    """

    base: int
    maximum: int | None
    floor: int
    active: tuple[Window, ...]
    until: datetime | None
    next_change: datetime | None

    @property
    def raised(self) -> bool:
        return self.floor > self.base

    def to_status(self) -> dict[str, Any]:
        """JSON-ready form for an app's status (instants as RFC 3339 UTC)."""
        return {
            "minReplicas": self.floor, "baseMinReplicas": self.base,
            "activeWindows": [{
                "cron": w.schedule.cron, "timezone": w.schedule.timezone,
                "duration": _duration_text(w.schedule.duration),
                "minReplicas": w.schedule.min_replicas,
                "start": _rfc3339(w.start), "end": _rfc3339(w.end)} for w in self.active],
            "until": _rfc3339(self.until) if self.until else None,
            "nextChange": _rfc3339(self.next_change) if self.next_change else None,
        }


def _rfc3339(instant: datetime) -> str:
    return instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _duration_text(span: timedelta) -> str:
    seconds, text = int(span.total_seconds()), ""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= size:
            text += f"{seconds // size}{unit}"
            seconds %= size
    return text or "0s"


def parse_schedules(annotation: str) -> tuple[Schedule, ...]:
    """The schedules in a ``pincompute.io/scale-schedules`` annotation value."""
    try:
        items = json.loads(annotation)
    except ValueError as exc:
        raise ScheduleError(f"{ANNOTATION_SCHEDULES} is not JSON: {exc}") from exc
    if not isinstance(items, list):
        raise ScheduleError(f"{ANNOTATION_SCHEDULES} must be a JSON list")
    return tuple(_schedule(i, item) for i, item in enumerate(items))


def _schedule(index: int, item: Any) -> Schedule:
    where = f"{ANNOTATION_SCHEDULES}[{index}]"
    if not isinstance(item, dict):
        raise ScheduleError(f"{where} must be an object")
    try:
        cron, zone = str(item["cron"]), str(item.get("timezone", "Etc/UTC"))
        seconds = duration_seconds(str(item["duration"]))
        floor = int(item["minReplicas"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ScheduleError(f"{where} needs cron, duration and minReplicas ({exc})") from exc
    if not croniter.is_valid(cron):
        raise ScheduleError(f"{where}: {cron!r} is not a cron expression")
    if seconds <= 0:
        raise ScheduleError(f"{where}: duration {item['duration']!r} is not positive")
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ScheduleError(f"{where}: unknown timezone {zone!r}") from exc
    return Schedule(cron=cron, timezone=zone, duration=timedelta(seconds=seconds),
                    min_replicas=floor)


def evaluate(schedules: Iterable[Schedule], base: int, now: datetime,
             maximum: int | None = None) -> Floor:
    """The floor at ``now`` (timezone-aware): the highest floor of the open windows, at
    least ``base`` and at most ``maximum``.

    An answer holds unchanged from its ``now`` until its ``next_change``, so it is kept and
    reused within that span (cron arithmetic costs about a millisecond per schedule).
    """
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("now must be timezone-aware")
    now = now.astimezone(UTC)
    key = (tuple(schedules), base, maximum)
    with _CACHE_LOCK:
        known = _CACHE.get(key)
    if known is not None and known[0] <= now and (known[1].next_change is None
                                                  or now < known[1].next_change):
        return known[1]
    floor = _evaluate(key[0], base, now, maximum)
    with _CACHE_LOCK:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.clear()
        _CACHE[key] = (now, floor)
    return floor


def _evaluate(schedules: tuple[Schedule, ...], base: int, now: datetime,
              maximum: int | None) -> Floor:
    lines = [_Timeline(s, now) for s in schedules]

    def floor_at(t: datetime) -> int:
        raised = max((ln.schedule.min_replicas for ln in lines if ln.open_at(t)), default=base)
        value = max(base, raised)
        return min(value, maximum) if maximum is not None else value

    floor = floor_at(now)
    active = tuple(sorted((ln.current for ln in lines if ln.current and ln.open_at(now)),
                          key=lambda w: (w.start, w.end)))
    next_change = _next_event(lines, now)
    until = None
    if floor > base:  # sweep forward, window by window, to where the floor drops
        t: datetime | None = now
        for _ in range(MAX_EVENTS):
            t = _next_event(lines, t) if t is not None else None
            if t is None or t >= now + LOOKAHEAD:
                break
            for line in lines:
                line.advance(t)
            if floor_at(t) < floor:
                until = t
                break
    return Floor(base=base, maximum=maximum, floor=floor, active=active, until=until,
                 next_change=next_change)


def hpa_floor(hpa: Mapping[str, Any], now: datetime) -> Floor | None:
    """The scheduled floor of a desired HPA object (None when it has no schedules).

    The base is the HPA's ``spec.minReplicas`` as compiled (default 1), the ceiling its
    ``spec.maxReplicas``. Raises :class:`ScheduleError` for an unreadable annotation.
    """
    annotation = (hpa.get("metadata", {}).get("annotations") or {}).get(ANNOTATION_SCHEDULES)
    if not annotation:
        return None
    spec = hpa.get("spec", {})
    maximum = spec.get("maxReplicas")
    return evaluate(parse_schedules(annotation), int(spec.get("minReplicas", 1)), now,
                    int(maximum) if maximum is not None else None)


def with_scheduled_floor(hpa: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    """A desired HPA with ``spec.minReplicas`` set to the floor at ``now``: a copy where
    that changes it (the copy shares every other part), else the HPA itself (never changed
    in place). Call it on the compiled (base) HPA in every pass: when the windows close the
    base floor returns by itself.
    """
    floor = hpa_floor(hpa, now)
    spec = hpa.get("spec") or {}
    if floor is None or spec.get("minReplicas") == floor.floor:
        return hpa if isinstance(hpa, dict) else dict(hpa)
    return {**hpa, "spec": {**spec, "minReplicas": floor.floor}}


# --- placing windows on the time line ------------------------------------------------------
class _Timeline:
    """One schedule's windows in start order, read lazily as a sweep moves forward:
    ``current`` opened last at or before the sweep's time, ``upcoming`` opens after it."""

    def __init__(self, schedule: Schedule, now: datetime) -> None:
        self.schedule = schedule
        self._walls = croniter(schedule.cron, _wall(now, schedule.zone) + _DST_MARGIN)
        latest = self._latest_fire(now)
        if latest is None:
            self._walls.set_current(_wall(now, schedule.zone), force=True)
        self.current = _window(schedule, latest) if latest is not None else None
        self.upcoming = self._next()

    def _latest_fire(self, now: datetime) -> datetime | None:
        """The latest wall-clock cron time whose window starts at or before ``now``.

        The wall-clock-to-instant mapping never goes backwards, so scanning down from a
        little after ``now`` on the wall clock, the first time that starts at or before
        ``now`` is the latest one. None when the cron never matched (say, 30 February).
        """
        for _ in range(_SCAN_LIMIT):
            try:
                wall = self._walls.get_prev(datetime)
            except ValueError:  # croniter found no earlier date
                return None
            if _instant(wall, self.schedule.zone)[0] <= now:
                return wall
        return None

    def _next(self) -> Window | None:
        try:
            return _window(self.schedule, self._walls.get_next(datetime))
        except ValueError:  # croniter found no later date
            return None

    def open_at(self, t: datetime) -> bool:
        """Whether a window is open at ``t`` (window ends never go backwards either, so the
        window opened last is open if any is)."""
        return self.current is not None and self.current.end > t

    def advance(self, t: datetime) -> None:
        while self.upcoming is not None and self.upcoming.start <= t:
            self.current, self.upcoming = self.upcoming, self._next()


def _next_event(lines: list[_Timeline], after: datetime) -> datetime | None:
    """The first instant after ``after`` at which a window opens or closes."""
    times = [ln.upcoming.start for ln in lines if ln.upcoming is not None]
    times += [ln.current.end for ln in lines if ln.current is not None and ln.open_at(after)]
    return min((t for t in times if t > after), default=None)


def _window(schedule: Schedule, wall: datetime) -> Window:
    zone = schedule.zone
    start, opened = _instant(wall, zone)
    end, _ = _instant(opened + schedule.duration, zone)
    return Window(schedule=schedule, start=start, end=end)


def _wall(instant: datetime, zone: ZoneInfo) -> datetime:
    """The naive wall-clock reading of ``instant`` in ``zone``."""
    return instant.astimezone(zone).replace(tzinfo=None)


def _instant(wall: datetime, zone: ZoneInfo) -> tuple[datetime, datetime]:
    """The UTC instant a naive wall-clock time denotes in ``zone``, and the wall-clock time
    it is read as: itself, or for a skipped time the first time after the jump."""
    first = wall.replace(tzinfo=zone, fold=0)  # the earlier reading of a repeated time
    instant = first.astimezone(UTC)
    if _wall(instant, zone) == wall:
        return instant, wall
    jump = _transition(wall.replace(tzinfo=zone, fold=1).astimezone(UTC), instant, zone)
    return jump, _wall(jump, zone)


def _transition(before: datetime, after: datetime, zone: ZoneInfo) -> datetime:
    """The first instant in ``(before, after]`` with ``after``'s UTC offset (to the second)."""
    offset = after.astimezone(zone).utcoffset()
    low, high = before, after
    while high - low > timedelta(seconds=1):
        mid = low + (high - low) / 2
        mid = mid.replace(microsecond=0)
        if mid.astimezone(zone).utcoffset() == offset:
            high = mid
        else:
            low = mid
    return high

