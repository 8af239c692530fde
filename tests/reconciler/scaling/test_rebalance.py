"""Rebalancing a PinScaler's HPA maxima across clusters (pure decisions)."""

from __future__ import annotations

from reconciler.scaling.rebalance import (
    Bounds,
    Observed,
    observe,
    rebalance,
    state_of,
    step_for,
    stored_bounds,
)

BOUNDS = {"a": Bounds(1, 3), "b": Bounds(1, 3), "c": Bounds(1, 3)}


def seen(current: int, maximum: int = 3) -> Observed:
    return Observed(current, maximum)


def test_a_busy_cluster_takes_max_share_from_clusters_with_room_in_one_bounded_step() -> None:
    # b has the most room (runs 1 of 3): it gives first
    out = rebalance(BOUNDS, {"a": seen(3), "b": seen(1), "c": seen(2)}, {}, step=2)
    assert out.bounds == {"a": Bounds(1, 5), "b": Bounds(1, 1), "c": Bounds(1, 3)}
    assert sum(b.max for b in out.bounds.values()) == 9  # the scaler's maxReplicas holds
    assert out.moves == [
        "a ran at its maximum (3/3) while b had room (1/3): moved 2 of maxReplicas from b "
        "to a"]
    # two busy clusters share the step
    both = rebalance(BOUNDS, {"a": seen(3), "b": seen(3), "c": seen(1)}, {}, step=2)
    assert both.bounds == {"a": Bounds(1, 4), "b": Bounds(1, 4), "c": Bounds(1, 1)}


def test_a_donor_keeps_what_it_runs_and_its_minimum() -> None:
    bounds = {"a": Bounds(1, 3), "b": Bounds(2, 3)}
    out = rebalance(bounds, {"a": seen(3), "b": seen(2)}, {}, step=5)
    assert out.bounds == {"a": Bounds(1, 4), "b": Bounds(2, 2)}
    # every cluster at its maximum: nobody has room, nothing moves
    full = rebalance(bounds, {"a": seen(3), "b": seen(3)}, {}, step=5)
    assert full.bounds == bounds and not full.moves


def test_the_busy_clusters_capacity_caps_the_move() -> None:
    out = rebalance(BOUNDS, {"a": seen(3), "b": seen(1), "c": seen(1)}, {"a": 4}, step=4)
    assert out.bounds["a"] == Bounds(1, 4)
    assert sum(b.max for b in out.bounds.values()) == 9


def test_a_donor_left_at_its_lowered_maximum_is_not_busy_so_nothing_swings_back() -> None:
    moved = {"a": Bounds(1, 1), "b": Bounds(1, 5), "c": Bounds(1, 3)}
    # a runs 1 of its lowered maximum 1, b 3 of 5: without ScalingLimited, a is not busy
    out = rebalance(moved, {"a": seen(1, 1), "b": seen(3, 5), "c": seen(2)}, {}, 2, BOUNDS)
    assert out.bounds == moved and not out.moves
    # unless its HPA says it wants more
    limited = Observed(1, 1, True)
    assert rebalance(moved, {"a": limited, "b": seen(3, 5), "c": seen(2)}, {}, 2,
                     BOUNDS).bounds["a"] == Bounds(1, 3)
    # an HPA whose ScalingLimited is False is satisfied at its maximum
    assert not rebalance(BOUNDS, {"a": Observed(3, 3, False), "b": seen(1), "c": seen(1)},
                         {}, 2).moves


def test_nothing_moves_without_a_busy_cluster_or_before_the_controller_reports() -> None:
    assert rebalance(BOUNDS, {"a": seen(2), "b": seen(1), "c": seen(1)}, {}, 2).bounds == BOUNDS
    assert rebalance(BOUNDS, {"a": None, "b": seen(1), "c": seen(1)}, {}, 2).bounds == BOUNDS


def test_step_is_a_quarter_of_the_scalers_maximum_at_least_one() -> None:
    assert (step_for(9), step_for(40), step_for(2)) == (2, 10, 1)


def test_observe_reads_a_live_hpa() -> None:
    hpa = {"spec": {"maxReplicas": 3}, "status": {
        "currentReplicas": 3, "conditions": [
            {"type": "ScalingLimited", "status": "True", "reason": "TooManyReplicas"}]}}
    assert observe(hpa) == Observed(3, 3, True) and observe(hpa).at_max  # type: ignore[union-attr]
    assert observe({"spec": {"maxReplicas": 3}, "status": {"currentReplicas": 3}}) == \
        Observed(3, 3, None)
    assert observe({"spec": {"maxReplicas": 3}, "status": {}}) is None
    assert observe(None) is None


def test_stored_bounds_hold_only_while_the_compiled_division_is_the_same() -> None:
    moved = {"a": Bounds(1, 5), "b": Bounds(1, 2), "c": Bounds(1, 2)}
    state = state_of(BOUNDS, moved, "why", since=0)
    assert stored_bounds(state, BOUNDS) == moved
    respec = {"a": Bounds(1, 4), "b": Bounds(1, 4), "c": Bounds(1, 4)}
    assert stored_bounds(state, respec) == respec  # the specs changed: compiled wins
    assert stored_bounds(None, BOUNDS) == BOUNDS
    # a minimum above a moved maximum comes down to it
    assert stored_bounds(state_of(BOUNDS, {"a": Bounds(1, 7), "b": Bounds(1, 1),
                                           "c": Bounds(1, 1)}, "", 0),
                         {"a": Bounds(1, 3), "b": Bounds(2, 3), "c": Bounds(1, 3)}
                         )["b"] == Bounds(1, 1)
