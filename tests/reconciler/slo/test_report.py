"""Burn rates, budget left and value of an SLO, against a hand computation on a synthetic
series of samples."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from pincompile.contract import LATENCY_BUCKETS, Objective
from reconciler.slo.report import evaluate
from reconciler.store.verification import SLISample

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
API = Objective(name="api", sli="api-availability", objective=99.9, window="30d",
                routes=["workload"])


def api_sample(ago: timedelta, total: int, errors: int, group: str = "workload") -> SLISample:
    return SLISample("api-availability", (("group", group),), NOW - ago, total, errors)


SERIES = [
    api_sample(timedelta(days=10), 50_000, 0),      # in 30d only
    api_sample(timedelta(days=2), 10_000, 5),       # in 3d and 30d
    api_sample(timedelta(hours=3), 1_000, 2),       # in 6h, 3d, 30d
    api_sample(timedelta(minutes=30), 100, 1),      # in every window
    api_sample(timedelta(minutes=30), 900, 900, group="insight"),  # another route group
    api_sample(timedelta(days=40), 1_000, 1_000),   # older than the window
]


def test_burn_rates_budget_and_value_match_a_hand_computation() -> None:
    state = evaluate(API, SERIES, NOW)
    budget = 0.001
    assert state.events == 61_100 and state.bad == 8
    assert state.value == pytest.approx(100 * (1 - 8 / 61_100))
    assert state.budget_left == pytest.approx(1 - (8 / 61_100) / budget)  # 0.8691
    assert state.burn["1h"] == pytest.approx((1 / 100) / budget)          # 10.0
    assert state.burn["6h"] == pytest.approx((3 / 1_100) / budget)        # 2.727
    assert state.burn["3d"] == pytest.approx((8 / 11_100) / budget)       # 0.7207
    assert state.met is True
    assert [(p.key, p.events) for p in state.parts] == [("workload", 61_100)]


def test_no_events_is_no_value_and_no_burn_not_a_met_objective() -> None:
    state = evaluate(API, [], NOW)
    assert state.value is None and state.budget_left is None and state.met is None
    assert set(state.burn.values()) == {None}


def test_an_overspent_budget_is_negative_and_the_objective_not_met() -> None:
    state = evaluate(API, [api_sample(timedelta(minutes=5), 1_000, 3)], NOW)
    assert state.budget_left == pytest.approx(1 - 0.003 / 0.001)  # -2: three budgets spent
    assert state.met is False


def test_a_latency_slo_counts_slow_and_failed_launches_bad_per_cluster() -> None:
    slo = Objective(name="launch", sli="launch-latency", objective=99.0, window="30d",
                    threshold="25s", tier="reserved")
    at25 = LATENCY_BUCKETS.index(25)

    def launches(cluster: str, total: int, within: int, failed: int, tier: str = "reserved"
                 ) -> SLISample:
        buckets = tuple(within if i >= at25 else 0 for i in range(len(LATENCY_BUCKETS)))
        return SLISample("launch-latency", (("cluster", cluster), ("tier", tier),
                                            ("source", "canary")),
                         NOW - timedelta(minutes=10), total, failed, buckets)

    state = evaluate(slo, [launches("a", 100, 100, 0), launches("b", 10, 6, 2),
                           launches("b", 50, 0, 50, tier="ondemand")], NOW)
    assert (state.events, state.bad) == (110, 4)  # b: 2 over 25 s and 2 that never got Ready
    parts = {p.key: p for p in state.parts}
    assert parts["a"].value == 100.0 and parts["b"].value == pytest.approx(60.0)
    assert parts["b"].burn_1h == pytest.approx((4 / 10) / 0.01)
