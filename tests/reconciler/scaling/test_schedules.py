"""Scheduled floors on a fixed clock: DST changes, overlaps, midnight, day-of-week."""

from __future__ import annotations

import bisect
import copy
import json
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter
from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from reconciler.scaling import (
    Floor,
    Schedule,
    ScheduleError,
    evaluate,
    hpa_floor,
    parse_schedules,
    with_scheduled_floor,
)
from tests.support.expand import GOLDEN

LA = ZoneInfo("America/Los_Angeles")
BERLIN = ZoneInfo("Europe/Berlin")
GOLDEN_HPA = (GOLDEN / "pinscaler" / "expected" / "west-128" / "search"
              / "horizontalpodautoscaler-api.yaml")


def sched(cron: str, duration: str, floor: int, tz: str = "Etc/UTC") -> Schedule:
    text = json.dumps([{"cron": cron, "duration": duration, "timezone": tz,
                        "minReplicas": floor}])
    return parse_schedules(text)[0]


def at(zone: ZoneInfo, *fields: int, fold: int = 0) -> datetime:
    """A local wall-clock time as an instant in UTC (``fold=1``: the repeated hour's second
    pass). UTC, so that adding hours means elapsed hours (Python adds wall-clock hours to a
    datetime in a named zone)."""
    return datetime(*fields, tzinfo=zone, fold=fold).astimezone(UTC)  # type: ignore[misc]


def utc(*fields: int) -> datetime:
    return datetime(*fields, tzinfo=UTC)  # type: ignore[misc]


def floor(schedules: list[Schedule], now: datetime, base: int = 1,
          maximum: int | None = None) -> int:
    return evaluate(schedules, base, now, maximum).floor


# --- daylight-saving changes (America/Los_Angeles, 2026: Mar 8 and Nov 1) -----------------
def test_window_follows_local_time_across_spring_forward() -> None:
    business = [sched("0 9 * * *", "8h", 5, "America/Los_Angeles")]
    # 09:00 PST is 17:00Z the day before the change, 09:00 PDT is 16:00Z on the day
    assert floor(business, utc(2026, 3, 7, 16, 30)) == 1
    assert floor(business, utc(2026, 3, 7, 17, 0)) == 5
    assert floor(business, utc(2026, 3, 8, 16, 0)) == 5
    state = evaluate(business, 1, utc(2026, 3, 8, 16, 30))
    assert state.until == at(LA, 2026, 3, 8, 17, 0) == utc(2026, 3, 9, 0, 0)
    assert [w.start for w in state.active] == [at(LA, 2026, 3, 8, 9, 0)]
    assert floor(business, at(LA, 2026, 3, 8, 16, 59)) == 5
    assert floor(business, at(LA, 2026, 3, 8, 17, 0)) == 1


def test_window_in_the_skipped_hour_opens_at_the_jump_and_keeps_its_duration() -> None:
    night = [sched("30 2 * * *", "1h", 4, "America/Los_Angeles")]
    jump = utc(2026, 3, 8, 10, 0)  # 02:00 PST becomes 03:00 PDT
    assert floor(night, jump - timedelta(seconds=1)) == 1
    state = evaluate(night, 1, jump)
    assert state.floor == 4
    assert state.active[0].start == jump
    assert state.until == jump + timedelta(hours=1)
    assert floor(night, jump + timedelta(hours=1)) == 1
    # the next day it opens at 02:30 PDT again
    assert floor(night, at(LA, 2026, 3, 9, 2, 29)) == 1
    assert floor(night, at(LA, 2026, 3, 9, 2, 30)) == 4


def test_whole_day_windows_cover_the_23_and_25_hour_days() -> None:
    day = [sched("0 0 8 3 *", "24h", 3, "America/Los_Angeles"),
           sched("0 0 1 11 *", "24h", 3, "America/Los_Angeles")]
    for start, hours in ((at(LA, 2026, 3, 8, 0, 0), 23), (at(LA, 2026, 11, 1, 0, 0), 25)):
        state = evaluate(day, 1, start)
        assert state.until == start + timedelta(hours=hours)
        for minutes in range(0, hours * 60, 20):
            assert floor(day, start + timedelta(minutes=minutes)) == 3, (start, minutes)
        assert floor(day, start + timedelta(hours=hours)) == 1


def test_repeated_hour_opens_a_window_once() -> None:
    short = [sched("15 1 * * *", "10m", 6, "America/Los_Angeles")]
    first = at(LA, 2026, 11, 1, 1, 20)  # 01:20 PDT
    second = at(LA, 2026, 11, 1, 1, 20, fold=1)  # 01:20 PST, an hour later
    assert second - first == timedelta(hours=1)
    assert floor(short, first) == 6
    assert floor(short, second) == 1


def test_window_follows_local_time_across_fall_back() -> None:
    business = [sched("0 9 * * *", "8h", 5, "America/Los_Angeles")]
    assert floor(business, utc(2026, 10, 31, 16, 30)) == 5  # 09:30 PDT
    assert floor(business, utc(2026, 11, 1, 16, 30)) == 1  # 08:30 PST
    assert floor(business, utc(2026, 11, 1, 17, 0)) == 5
    assert evaluate(business, 1, utc(2026, 11, 1, 17, 0)).until == utc(2026, 11, 2, 1, 0)


# --- overlaps, bounds ----------------------------------------------------------------------
def test_overlapping_windows_take_the_highest_floor() -> None:
    windows = [sched("0 8 * * *", "10h", 4), sched("0 12 * * *", "2h", 7)]
    assert floor(windows, utc(2026, 6, 1, 7, 59)) == 1
    assert floor(windows, utc(2026, 6, 1, 11, 0)) == 4
    state = evaluate(windows, 1, utc(2026, 6, 1, 13, 0))
    assert state.floor == 7
    assert {w.schedule.min_replicas for w in state.active} == {4, 7}
    assert state.until == utc(2026, 6, 1, 14, 0)  # back to 4 then, not to the base
    assert state.next_change == utc(2026, 6, 1, 14, 0)
    assert floor(windows, utc(2026, 6, 1, 15, 0)) == 4
    assert evaluate(windows, 1, utc(2026, 6, 1, 15, 0)).until == utc(2026, 6, 1, 18, 0)
    assert floor(windows, utc(2026, 6, 1, 18, 0)) == 1


def test_chained_windows_hold_the_floor_until_the_chain_ends() -> None:
    # hourly windows of 90 minutes overlap each other from 08:00 to 12:30
    chained = [sched("0 8-11 * * *", "90m", 3)]
    state = evaluate(chained, 1, utc(2026, 6, 1, 8, 45))
    assert state.floor == 3
    assert state.next_change == utc(2026, 6, 1, 9, 0)  # the next window opens
    assert state.until == utc(2026, 6, 1, 12, 30)


def test_floor_stays_within_the_hpa_bounds() -> None:
    high = [sched("0 8 * * *", "10h", 9)]
    assert floor(high, utc(2026, 6, 1, 9, 0), base=2, maximum=6) == 6
    low = [sched("0 8 * * *", "10h", 2)]
    state = evaluate(low, 5, utc(2026, 6, 1, 9, 0))
    assert state.floor == 5 and not state.raised and state.until is None
    assert len(state.active) == 1  # the window is open, it just asks for less


# --- midnight, day of week -----------------------------------------------------------------
def test_window_crossing_midnight() -> None:
    night = [sched("0 22 * * *", "4h", 5, "Europe/Berlin")]
    assert floor(night, at(BERLIN, 2026, 6, 1, 21, 59)) == 1
    assert floor(night, at(BERLIN, 2026, 6, 1, 23, 30)) == 5
    state = evaluate(night, 1, at(BERLIN, 2026, 6, 2, 1, 30))
    assert state.floor == 5
    assert state.active[0].start == at(BERLIN, 2026, 6, 1, 22, 0)  # opened yesterday
    assert state.until == at(BERLIN, 2026, 6, 2, 2, 0)
    assert floor(night, at(BERLIN, 2026, 6, 2, 2, 0)) == 1


def test_cron_with_day_of_week() -> None:
    weekdays = [sched("0 8 * * 1-5", "10h", 4, "America/Los_Angeles")]
    # 2026-06-05 is a Friday
    assert floor(weekdays, at(LA, 2026, 6, 5, 17, 59)) == 4
    closed = evaluate(weekdays, 1, at(LA, 2026, 6, 5, 18, 0))
    assert closed.floor == 1 and not closed.active
    assert closed.next_change == at(LA, 2026, 6, 8, 8, 0)  # Monday, over the weekend
    assert floor(weekdays, at(LA, 2026, 6, 6, 9, 0)) == 1  # Saturday
    assert floor(weekdays, at(LA, 2026, 6, 7, 9, 0)) == 1  # Sunday
    assert floor(weekdays, at(LA, 2026, 6, 8, 9, 0)) == 4  # Monday
    # a Friday-night window lasts into Saturday
    friday_night = [sched("0 22 * * FRI", "6h", 3, "America/Los_Angeles")]
    assert floor(friday_night, at(LA, 2026, 6, 6, 3, 0)) == 3
    assert floor(friday_night, at(LA, 2026, 6, 7, 3, 0)) == 1  # Sunday 03:00: none


# --- the desired HPA -----------------------------------------------------------------------
def golden_hpa() -> dict[str, Any]:
    hpa: dict[str, Any] = YAML(typ="safe").load(GOLDEN_HPA.read_text())
    return hpa


def test_compiled_hpa_gets_its_clusters_share_of_the_floor() -> None:
    hpa = golden_hpa()
    original = copy.deepcopy(hpa)
    base = hpa["spec"]["minReplicas"]
    # weekday 08:00-18:00 Los Angeles: this cluster's share of 12 is 4; the 1st of the
    # month (UTC, 1d): its share of 5 is 2
    monday_noon = at(LA, 2026, 6, 8, 12, 0)
    assert with_scheduled_floor(hpa, monday_noon)["spec"]["minReplicas"] == 4
    saturday = at(LA, 2026, 6, 6, 12, 0)
    assert with_scheduled_floor(hpa, saturday)["spec"]["minReplicas"] == base
    first_of_month = utc(2026, 8, 1, 12, 0)  # a Saturday
    assert with_scheduled_floor(hpa, first_of_month)["spec"]["minReplicas"] == 2
    assert hpa == original  # the desired object is left alone
    state = hpa_floor(hpa, monday_noon)
    assert isinstance(state, Floor)
    assert state.until == at(LA, 2026, 6, 8, 18, 0)


def test_floor_never_exceeds_max_replicas() -> None:
    hpa = golden_hpa()
    hpa["metadata"]["annotations"]["pincompute.io/scale-schedules"] = json.dumps(
        [{"cron": "0 * * * *", "duration": "2h", "minReplicas": 50}])
    out = with_scheduled_floor(hpa, utc(2026, 6, 1, 12, 0))
    assert out["spec"]["minReplicas"] == hpa["spec"]["maxReplicas"]


def test_hpa_without_schedules_is_the_hpa_itself() -> None:
    """No copy per HPA and pass: a long-running reconciler's next pass finds the very
    objects it digested (:class:`reconciler.plan.applied.Digests`)."""
    hpa = golden_hpa()
    del hpa["metadata"]["annotations"]["pincompute.io/scale-schedules"]
    assert hpa_floor(hpa, utc(2026, 6, 1)) is None
    assert with_scheduled_floor(hpa, utc(2026, 6, 1)) is hpa


def test_a_raised_floor_is_a_copy_and_the_compiled_hpa_stays() -> None:
    hpa = golden_hpa()
    base = hpa["spec"]["minReplicas"]
    out = with_scheduled_floor(hpa, utc(2026, 6, 1, 12, 0))
    assert out["spec"]["minReplicas"] != base and hpa["spec"]["minReplicas"] == base
    assert out["metadata"] is hpa["metadata"]


@pytest.mark.parametrize("annotation, message", [
    ("not json", "not JSON"),
    ('{"cron": "* * * * *"}', "JSON list"),
    ('[{"cron": "61 * * * *", "duration": "1h", "minReplicas": 2}]', "not a cron"),
    ('[{"cron": "0 * * * *", "duration": "1h", "minReplicas": 2, "timezone": "Mars/Base"}]',
     "unknown timezone"),
    ('[{"cron": "0 * * * *", "minReplicas": 2}]', "needs cron, duration"),
])
def test_unreadable_annotation_names_the_problem(annotation: str, message: str) -> None:
    with pytest.raises(ScheduleError, match=message):
        parse_schedules(annotation)


def test_naive_clock_is_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        evaluate([sched("0 8 * * *", "1h", 2)], 1, datetime(2026, 6, 1, 8, 30))


# --- against a brute-force reading of the same rules ---------------------------------------
CRONS = ["0 9 * * *", "30 2 * * *", "15 1 * * *", "0 8 * * 1-5", "*/45 * * * *",
         "0 22 * * FRI", "0 0 * * *", "0 1-3 * * 0"]
DURATIONS = ["10m", "45m", "90m", "8h", "24h", "26h"]


Windows = list[tuple[datetime, datetime, Schedule]]


def reference(schedules: list[Schedule], now: datetime) -> Windows:
    """Every window from two days before ``now`` to a day after, by brute force: a
    wall-clock time denotes the first minute at which the zone's clock reads it or later."""
    zone = schedules[0].zone
    first = now - timedelta(days=2)
    minutes = [first + timedelta(minutes=i) for i in range(int(4.5 * 24 * 60))]
    reading, high = [], datetime.min
    for m in minutes:
        high = max(high, m.astimezone(zone).replace(tzinfo=None))
        reading.append(high)

    def instant(wall: datetime) -> datetime:
        return minutes[bisect.bisect_left(reading, wall)]

    windows = []
    for s in schedules:
        it = croniter(s.cron, reading[0])
        while (wall := it.get_next(datetime)) < reading[-1] - timedelta(days=1, hours=6):
            start = instant(wall)
            opened = start.astimezone(zone).replace(tzinfo=None)
            windows.append((start, instant(opened + s.duration), s))
    return windows


def floor_of(windows: Windows, base: int, t: datetime) -> int:
    return max([base] + [s.min_replicas for a, b, s in windows if a <= t < b])


@settings(max_examples=30, deadline=None)
@given(crons=st.lists(st.tuples(st.sampled_from(CRONS), st.sampled_from(DURATIONS),
                                st.integers(2, 9)), min_size=1, max_size=3),
       offset=st.integers(0, 3 * 24 * 60), zone=st.sampled_from(["America/Los_Angeles",
                                                                 "Europe/Berlin"]),
       day=st.sampled_from([datetime(2026, 3, 7, tzinfo=UTC), datetime(2026, 3, 28, tzinfo=UTC),
                            datetime(2026, 10, 24, tzinfo=UTC),
                            datetime(2026, 10, 31, tzinfo=UTC)]))
def test_matches_brute_force_around_dst_changes(
    crons: list[tuple[str, str, int]], offset: int, zone: str, day: datetime
) -> None:
    schedules = [sched(c, d, f, zone) for c, d, f in crons]
    now = day + timedelta(minutes=offset)
    state = evaluate(schedules, 1, now)
    windows = reference(schedules, now)
    assert state.floor == floor_of(windows, 1, now)
    assert all(w.is_open(now) for w in state.active)
    assert {w.schedule for w in state.active} == {s for a, b, s in windows if a <= now < b}
    # the answer holds until next_change: no window opens or closes before it, except a
    # window that closes while a later one of its schedule is still open
    horizon = now + timedelta(hours=20)
    change = state.next_change
    if change is not None and change < horizon:
        assert any(change in (a, b) for a, b, _ in windows)
    for a, b, _ in windows:
        for t in (a, b):
            if now < t < min(change or horizon, horizon):
                assert floor_of(windows, 1, t) == state.floor, t
    if state.until is not None and state.until < horizon:
        assert floor_of(windows, 1, state.until) < state.floor
        # the floor may rise before it drops (a higher window opens meanwhile), never fall
        assert floor_of(windows, 1, state.until - timedelta(minutes=1)) >= state.floor


def test_reused_answers_hold_only_until_the_next_change() -> None:
    windows = [sched("0 12 * * *", "2h", 7)]
    assert floor(windows, utc(2026, 6, 1, 13, 0)) == 7
    assert floor(windows, utc(2026, 6, 1, 11, 0)) == 1  # earlier than the kept answer
    assert floor(windows, utc(2026, 6, 1, 13, 59, 59)) == 7
    assert floor(windows, utc(2026, 6, 1, 14, 0)) == 1


def test_status_names_the_open_window_and_when_the_floor_drops() -> None:
    state = evaluate([sched("0 8 * * 1-5", "10h", 4, "America/Los_Angeles")], 1,
                     at(LA, 2026, 6, 8, 12, 0))
    assert state.to_status() == {
        "minReplicas": 4, "baseMinReplicas": 1,
        "activeWindows": [{"cron": "0 8 * * 1-5", "timezone": "America/Los_Angeles",
                           "duration": "10h", "minReplicas": 4,
                           "start": "2026-06-08T15:00:00Z", "end": "2026-06-09T01:00:00Z"}],
        "until": "2026-06-09T01:00:00Z", "nextChange": "2026-06-09T01:00:00Z",
    }
