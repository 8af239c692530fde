"""Usage samples on both backends: each sample charged for the part of it inside the
window, at the prices it was taken with; idle capacity apart; hourly series."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from reconciler.store import Store
from reconciler.store.records import ClusterSample, UsageSample
from reconciler.store.usage import (
    add_usage,
    app_costs,
    cluster_costs,
    clusters_in,
    projects_in,
    series,
)

GIB = 2**30
T0 = 1_800_000_000.0  # a multiple of 300 and of 3600
WEB, API = ("PinApp", "shop", "web"), ("PinApp", "ads", "api")
PRICES = (0.04, 0.005, 2.0)  # a core-hour, a GiB-hour, a GPU-hour


def sample(t: float, app: tuple[str, str, str] = WEB, *, cpu: float = 2.0,
           used: tuple[float, float] | None = (0.6, 0.4 * GIB),
           prices: tuple[float, float, float] | None = PRICES) -> UsageSample:
    return UsageSample(t, 300.0, "east", app, "reserved", 2, (cpu, 1.0 * GIB, 0.0),
                       (cpu, 1.0 * GIB), used, prices, "USD")


def test_a_window_charges_the_hours_of_each_sample_inside_it(store: Store) -> None:
    add_usage(store, [sample(T0 + 300 * i) for i in range(12)], [])  # one hour
    [web] = app_costs(store, T0, T0 + 3600)
    # 2 cores x 0.04 + 1 GiB x 0.005, for one hour
    assert web.cost == pytest.approx(0.085)
    assert web.cost_by_resource == pytest.approx((0.08, 0.005, 0.0))
    assert web.requested_hours == pytest.approx((2.0, GIB, 0.0))
    assert web.used_hours[0] / web.measured_hours[0] == pytest.approx(0.3)
    # half of the first sample and of the last: 55 minutes
    [part] = app_costs(store, T0 + 150, T0 + 3450)
    assert part.cost == pytest.approx(0.085 * 55 / 60)


def test_usage_over_the_request_is_what_is_charged(store: Store) -> None:
    over = UsageSample(T0, 3600.0, "east", WEB, "reserved", 1, (1.0, GIB, 0.0),
                       (1.5, 2.0 * GIB), (1.5, 2.0 * GIB), PRICES, "USD")
    add_usage(store, [over], [])
    [web] = app_costs(store, T0, T0 + 3600)
    assert web.cost == pytest.approx(1.5 * 0.04 + 2 * 0.005)


def test_unpriced_and_unmeasured_samples(store: Store) -> None:
    add_usage(store, [sample(T0, prices=None), sample(T0 + 300, used=None)], [])
    [web] = app_costs(store, T0, T0 + 600)
    assert web.unpriced_hours == pytest.approx(300 / 3600)
    assert web.cost == pytest.approx(0.085 * 300 / 3600)
    assert web.measured_hours[0] == pytest.approx(2.0 * 300 / 3600)  # only the first


def test_two_replicas_sampling_the_same_time_write_one_row(store: Store) -> None:
    add_usage(store, [sample(T0)], [])
    add_usage(store, [sample(T0, cpu=4.0)], [])
    [web] = app_costs(store, T0, T0 + 300)
    assert web.requested_hours[0] == pytest.approx(2.0 * 300 / 3600)


def test_idle_capacity_is_allocatable_no_pod_is_charged_for(store: Store) -> None:
    add_usage(store, [], [ClusterSample(T0, 3600.0, "east", (10.0, 40.0 * GIB, 1.0),
                                        (4.0, 8.0 * GIB, 0.0), (5.0, 8.0 * GIB),
                                        (1.0, 2.0 * GIB), PRICES, "USD")])
    [east] = cluster_costs(store, T0, T0 + 3600)
    assert east.capacity_cost == pytest.approx(10 * 0.04 + 40 * 0.005 + 2.0)
    assert east.idle_cost == pytest.approx(5 * 0.04 + 32 * 0.005 + 2.0)


def test_projects_clusters_and_hourly_series(store: Store) -> None:
    add_usage(store, [sample(T0 + 300 * i) for i in range(24)]
              + [sample(T0 + 300 * i, API, cpu=1.0) for i in range(12)], [])
    assert projects_in(store, T0, T0 + 7200) == ["ads", "shop"]
    assert projects_in(store, T0 + 3600, T0 + 7200) == ["shop"]
    assert clusters_in(store, T0, T0 + 7200, ["shop"]) == ["east"]
    rows = series(store, T0, T0 + 7200, 3600.0, "shop")
    assert [(t, tier, cpu) for t, _, tier, cpu, *_ in rows] == [
        (T0, "reserved", pytest.approx(2.0)), (T0 + 3600, "reserved", pytest.approx(2.0))]
    assert rows[0][5] == pytest.approx(0.6)


def test_prune_drops_old_usage(store: Store) -> None:
    add_usage(store, [sample(T0)], [])
    store.prune(now=datetime.fromtimestamp(T0, UTC) + timedelta(days=8))
    assert app_costs(store, T0, T0 + 300) == []
