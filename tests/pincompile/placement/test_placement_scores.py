"""Score plugins: rendezvous stability, capacity-weighted preference, zone spread."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from pincompile.placement import scores
from tests.support.placement import app, cluster, place, project, template

SETTINGS = settings(max_examples=100, deadline=None)


def test_rendezvous_is_fixed_across_runs_and_versions() -> None:
    # placement must not change between runs or Python versions (no hash(), no set order):
    # if this value changes, every workload in every fleet moves.
    assert scores.rendezvous("PinApp/search/search-api", "use1a-general-01") == (
        0.7662129965383666)
    assert 0 < scores.rendezvous("x") < 1


def test_headroom_is_pods_that_fit() -> None:
    p, _ = place(project(), cluster("a", cpu="10", memory="100Gi"),
                 app("web", pod=template(cpu="2", memory="1Gi")))
    d = p.decision(("PinApp", "team", "web"))
    assert d is not None and d.scores["a"]["headroom"] == 5.0
    assert scores.headroom(None) == 1.0  # nothing in the capacity constrains the pod
    assert scores.headroom(Decimal("2.5")) == 2.5


def test_clusters_are_preferred_in_proportion_to_headroom() -> None:
    """Weighted rendezvous: over many workloads, a cluster with three times the headroom is
    the first choice about three times as often (the fleet fills by capacity)."""
    wins: Counter[str] = Counter()
    for i in range(4000):
        ranked = scores.by_total(scores.static_scores(
            f"PinPod/team/w{i}", {"big": Decimal(300), "small": Decimal(100)}))
        wins[ranked[0]] += 1
    assert 0.72 < wins["big"] / 4000 < 0.78


@SETTINGS
@given(st.lists(st.sampled_from(["c1", "c2", "c3", "c4", "c5"]), min_size=1, unique=True),
       st.text(min_size=1, max_size=10))
def test_an_added_cluster_never_reorders_the_others(names: list[str], workload: str) -> None:
    fits = {n: Decimal(10 * (i + 1)) for i, n in enumerate(names)}
    before = scores.by_total(scores.static_scores(workload, fits))
    after = scores.by_total(scores.static_scores(workload, {**fits, "new": Decimal(50)}))
    assert [c for c in after if c != "new"] == before


def test_zone_round_robin_takes_every_zone_before_a_second_cluster_of_any() -> None:
    table = {"a1": {"total": 9.0}, "a2": {"total": 8.0}, "a3": {"total": 7.0},
             "b1": {"total": 1.0}, "c1": {"total": 0.5}}
    zones = {"a1": "za", "a2": "za", "a3": "za", "b1": "zb", "c1": "zc"}
    order = scores.zone_round_robin(table, zones)
    assert order == ["a1", "b1", "c1", "a2", "a3"]
    assert [table[c]["zone-spread"] for c in order] == [100.0, 100.0, 100.0, 50.0, 100 / 3]


@SETTINGS
@given(st.lists(st.sampled_from(["za", "zb", "zc", "zd", "ze"]), min_size=1, unique=True),
       st.text(min_size=1, max_size=10))
def test_zone_order_is_fixed_per_workload_and_zone(zones: list[str], workload: str) -> None:
    order = scores.zone_order(workload, zones)
    assert sorted(order) == sorted(zones)
    grown = scores.zone_order(workload, [*zones, "znew"])
    assert [z for z in grown if z != "znew"] == order
    assert scores.zone_order(workload, list(reversed(zones))) == order
