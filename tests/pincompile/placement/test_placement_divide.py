"""Property tests of the pure division functions."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from pincompile.placement.divide import Slot, bounds_like, divide, fill, offsets, webster

SETTINGS = settings(max_examples=200, deadline=None)
ZONES = ["za", "zb", "zc", "zd"]


@st.composite
def slot_lists(draw: st.DrawFn, *, capped: bool = True, min_size: int = 1) -> list[Slot]:
    n = draw(st.integers(min_size, 6))
    slots = []
    for i in range(n):
        cap = draw(st.one_of(st.none(), st.integers(1, 30))) if capped else None
        weight = Decimal(draw(st.integers(1, 500))) / 7
        slots.append(Slot(f"c{i}", draw(st.sampled_from(ZONES)), weight, cap))
    return slots


spreads = st.sampled_from(["zone", "cluster", "none"])


def room(slots: list[Slot]) -> int | None:
    return None if any(s.cap is None for s in slots) else sum(s.cap or 0 for s in slots)


def zone_totals(slots: list[Slot], counts: dict[str, int]) -> Counter[str]:
    totals: Counter[str] = Counter({s.zone: 0 for s in slots})
    for s in slots:
        totals[s.zone] += counts[s.name]
    return totals


@SETTINGS
@given(slot_lists(), spreads, st.integers(0, 120), st.permutations(ZONES))
def test_sum_equals_total_and_caps_hold(slots: list[Slot], spread: str, total: int,
                                        order: list[str]) -> None:
    counts = divide(total, slots, spread, order)  # type: ignore[arg-type]
    assert set(counts) == {s.name for s in slots}
    for s in slots:
        assert counts[s.name] >= 0
        assert s.cap is None or counts[s.name] <= s.cap
    limit = room(slots)
    assert sum(counts.values()) == (total if limit is None else min(total, limit))


@SETTINGS
@given(slot_lists(capped=False), st.integers(0, 120), st.permutations(ZONES))
def test_zone_spread_balances_zones_within_one(slots: list[Slot], total: int,
                                               order: list[str]) -> None:
    totals = zone_totals(slots, divide(total, slots, "zone", order))
    assert max(totals.values()) - min(totals.values()) <= 1
    # the zones that get one more are the first in the workload's zone order
    present = [z for z in order if z in totals]
    assert [totals[z] for z in present] == sorted((totals[z] for z in present), reverse=True)


@SETTINGS
@given(slot_lists(), st.integers(0, 120), st.permutations(ZONES))
def test_zone_balance_holds_whenever_every_zone_has_room(slots: list[Slot], total: int,
                                                         order: list[str]) -> None:
    zones = {s.zone for s in slots}
    fair = -(-total // len(zones))
    for z in zones:
        members = [s for s in slots if s.zone == z]
        cap = room(members)
        if cap is not None and cap < fair:
            return  # a full zone may push replicas to the others: not this property
    totals = zone_totals(slots, divide(total, slots, "zone", order))
    assert max(totals.values()) - min(totals.values()) <= 1


@SETTINGS
@given(slot_lists(capped=False), st.integers(0, 120))
def test_cluster_spread_is_even(slots: list[Slot], total: int) -> None:
    counts = divide(total, slots, "cluster", ZONES)
    assert max(counts.values()) - min(counts.values()) <= 1


@SETTINGS
@given(slot_lists(), st.integers(0, 120))
def test_spread_none_fills_in_preference_order(slots: list[Slot], total: int) -> None:
    counts = [divide(total, slots, "none", ZONES)[s.name] for s in slots]
    # every cluster before the last one used is full
    used = [i for i, n in enumerate(counts) if n > 0]
    for i in range(used[-1] if used else 0):
        assert slots[i].cap is not None and counts[i] == slots[i].cap


@SETTINGS
@given(slot_lists(), spreads, st.integers(0, 100), st.permutations(ZONES), st.integers(0, 3))
def test_floor_is_given_first(slots: list[Slot], spread: str, total: int, order: list[str],
                              floor: int) -> None:
    slots = [Slot(s.name, s.zone, s.weight, None if s.cap is None else max(s.cap, floor))
             for s in slots]
    counts = divide(total, slots, spread, order, floor)  # type: ignore[arg-type]
    assert all(n >= floor for n in counts.values())
    if total >= floor * len(slots) and room(slots) is None:
        assert sum(counts.values()) == total


@SETTINGS
@given(slot_lists(), spreads, st.integers(0, 100), st.permutations(ZONES))
def test_house_monotone_one_more_never_takes_from_anyone(
        slots: list[Slot], spread: str, total: int, order: list[str]) -> None:
    """Dividing total+1 gives nobody less: min ≤ replicas ≤ max per cluster when the three
    are divided the same way."""
    before = divide(total, slots, spread, order)  # type: ignore[arg-type]
    after = divide(total + 1, slots, spread, order)  # type: ignore[arg-type]
    assert all(after[n] >= before[n] for n in before)


@SETTINGS
@given(slot_lists(), spreads, st.integers(0, 100), st.permutations([*ZONES, "znew"]),
       st.integers(1, 40), st.sampled_from([*ZONES, "znew"]), st.data())
def test_adding_a_cluster_only_takes_replicas_from_others(
        slots: list[Slot], spread: str, total: int, order: list[str], cap: int, zone: str,
        data: st.DataObject) -> None:
    """The new-states property: a new cluster (anywhere in the preference order, in an
    existing zone or a new one) never gives another cluster more; so the replicas that move
    are exactly those the new cluster takes."""
    limit = room(slots)
    if limit is not None and limit < total:
        return  # not enough room before: not the property under test
    new = Slot("cnew", zone, Decimal(data.draw(st.integers(1, 500))) / 7, cap)
    at = data.draw(st.integers(0, len(slots)))
    grown = [*slots[:at], new, *slots[at:]]
    before = divide(total, slots, spread, order)  # type: ignore[arg-type]
    after = divide(total, grown, spread, order)  # type: ignore[arg-type]
    assert all(after[s.name] <= before[s.name] for s in slots)
    moved = sum(before[s.name] - after[s.name] for s in slots)
    assert moved == after["cnew"]


@SETTINGS
@given(st.lists(st.integers(0, 50), min_size=1, max_size=8))
def test_offsets_make_contiguous_ranges_covering_every_index_once(counts: list[int]) -> None:
    named = [(f"c{i}", n) for i, n in enumerate(counts)]
    starts = offsets(named)
    covered = [i for name, n in named for i in range(starts[name], starts[name] + n)]
    assert covered == list(range(sum(counts)))


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from([0, 1, 2, 3.5, 1e-3, 7 / 3, 100, 1e6]),
                          st.one_of(st.none(), st.integers(0, 20000)), st.integers(0, 3)),
                min_size=1, max_size=6),
       st.integers(0, 200000))
def test_large_totals_take_a_head_start_with_the_same_result(
        parties: list[tuple[float, int | None, int]], total: int) -> None:
    weights = [w for w, _, _ in parties]
    floors = [f for _, _, f in parties]
    caps = [None if c is None else max(c, f) for _, c, f in parties]
    assert webster(total, weights, caps, floors) == webster(total, weights, caps, floors,
                                                            head_start=False)


def test_webster_is_proportional_and_ties_go_to_the_first() -> None:
    assert webster(7, [1, 1, 1]) == [3, 2, 2]
    assert webster(6, [512, 384]) == [3, 3]
    assert webster(10, [3, 1]) == [8, 2]
    assert webster(5, [1, 1], caps=[1, None]) == [1, 4]
    assert webster(1, [1, 1], floors=[1, 1]) == [1, 1]  # floors win over the total
    assert webster(4, [0, 0]) == [2, 2]  # no weights: equal


def test_fill_respects_caps_and_floors() -> None:
    assert fill(10, [4, None, 3]) == [4, 6, 0]
    assert fill(5, [2, 2, 2]) == [2, 2, 1]
    assert fill(2, [5, 5], floors=[1, 1]) == [1, 1]


@SETTINGS
@given(st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.integers(1, 40), min_size=1),
       st.integers(1, 80))
def test_bounds_like_keeps_every_cluster_within_one_and_its_max(
        maxima: dict[str, int], total: int) -> None:
    split = bounds_like(total, maxima)
    assert all(1 <= split[c] <= maxima[c] for c in maxima)
    if len(maxima) <= total <= sum(maxima.values()):
        assert sum(split.values()) == total
