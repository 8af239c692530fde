"""What serve samples: per app and cluster its pods' requests, use and charge (the larger
of the two, pod by pod), the tier's prices from the Cluster spec; per cluster its
allocatable and what is charged of it."""

from __future__ import annotations

from pathlib import Path

import pytest
from insight_helpers import FixedInsight, cluster_cr, metrics, node, pod, reading

from reconciler.insight.records import Reading
from reconciler.insight.sampler import UsageSampler, prices_of, samples_of
from reconciler.store import Store
from reconciler.store.usage import app_costs

GIB = 2**30
PRICED = {**cluster_cr("east"), "spec": {**cluster_cr("east")["spec"], "prices": {
    "currency": "EUR", "reserved": {"cpu": 0.05, "memory": "0.01", "nvidia.com/gpu": 3},
    "ondemand": {"cpu": 0.04}}}}
EAST = reading("east", [node("n1", cpu="8", memory="32Gi")],
               [pod("a", "shop", cpu="2", memory="1Gi"), pod("b", "shop", cpu="1"),
                pod("s", "kube-system", cpu="500m", tier=None, app=None)],
               usage=[metrics("shop", "a", "500m", "2Gi"), metrics("shop", "b", "1500m", "1Gi")])


def test_prices_come_from_the_cluster_spec_per_tier() -> None:
    assert prices_of(PRICED, "reserved") == ((0.05, 0.01, 3.0), "EUR")
    assert prices_of(PRICED, "ondemand") == ((0.04, 0.0, 0.0), "EUR")
    assert prices_of(PRICED, "preemptible") == (None, "")
    assert prices_of(cluster_cr("west"), "reserved") == (None, "")


def test_each_pod_is_charged_the_larger_of_request_and_use() -> None:
    [web], cluster = samples_of(PRICED, EAST, 1_800_000_000.0, 300.0)
    assert (web.app, web.tier, web.pods) == (("PinApp", "shop", "web"), "reserved", 2)
    assert web.requested == (3.0, 2.0 * GIB, 0.0)
    # a: 2 cpu requested, 0.5 used -> 2; 1Gi requested, 2Gi used -> 2Gi
    # b: 1 cpu requested, 1.5 used -> 1.5; 1Gi -> 1Gi
    assert web.charged == (3.5, 3.0 * GIB)
    assert web.used == (2.0, 3.0 * GIB)
    assert web.prices == (0.05, 0.01, 3.0)
    assert cluster is not None
    assert cluster.allocatable == (8.0, 32.0 * GIB, 0.0)
    assert cluster.requested == (3.5, 3.0 * GIB, 0.0)  # the system pod counts here
    assert cluster.charged == (4.0, 4.0 * GIB)
    assert cluster.prices == (0.04, 0.0, 0.0)  # idle is counted at ondemand prices


def test_without_metrics_the_request_is_charged_and_use_is_unknown() -> None:
    blind = reading("east", [node("n1")], [pod("a", "shop", cpu="2")])
    [web], cluster = samples_of(PRICED, blind, 0.0, 300.0)
    assert (web.charged[0], web.used) == (2.0, None)
    assert cluster is not None and cluster.used is None


def test_a_cluster_that_cannot_be_read_gives_no_samples() -> None:
    assert samples_of(PRICED, Reading("east", 0.0, error="refused"), 0.0, 300.0) == ([], None)


def test_the_sampler_writes_the_interval_it_is_in(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'insight.db'}")
    sampler = UsageSampler(FixedInsight([], [PRICED], {"east": EAST}), store, interval=300.0)
    assert sampler.sample(at=1_800_000_000.0) == 2
    [web] = app_costs(store, 1_800_000_000.0, 1_800_000_300.0)
    assert web.cost == pytest.approx((3.5 * 0.05 + 3 * 0.01) * 300 / 3600)
    store.close()
