"""The API's insight documents: a cluster per node pool and tier, a project's quota per
tier against what it requests and uses, across clusters."""

from __future__ import annotations

from insight_helpers import cluster_cr, metrics, node, pod, project_cr, quota, reading

from reconciler.insight.records import Reading
from reconciler.insight.views import cluster_view, project_view

EAST = reading(
    "east", [node("n1"), node("n2", ready=False), node("g1", cpu="4", pool="gpu",
                                                          tiers=["reserved"])],
    [pod("a", "shop", cpu="2", node="n1"), pod("b", "shop", cpu="1", node="g1"),
     pod("c", "shop", cpu="500m", tier="ondemand", node="n2"),
     pod("d", "kube-system", cpu="100m", tier=None, app=None, node="n1"),
     pod("e", "shop", cpu="3", node="")],
    (quota("shop", "reserved", "10", "6"),),
    [metrics("shop", "a", "1", "100Mi"), metrics("shop", "b", "250m", "100Mi")])


def test_a_cluster_per_node_pool_and_tier_with_its_failover_state() -> None:
    view = cluster_view(cluster_cr("east", failover={"phase": "Returning", "reason": "back"}),
                        EAST)
    assert view["failover"] == {"phase": "Returning", "reason": "back", "since": None}
    assert view["nodes"] == {"total": 3, "ready": 2}
    assert view["allocatable"]["cpu"] == "20"
    assert view["requested"]["cpu"] == "3600m"  # the pending pod e is not on a node
    assert view["pending"]["cpu"] == "3"
    assert view["requestedByTier"] == {
        "reserved": {"cpu": "3", "memory": "2Gi", "pods": "2"},
        "ondemand": {"cpu": "500m", "memory": "1Gi", "pods": "1"},
        "other": {"cpu": "100m", "memory": "1Gi", "pods": "1"}}
    general, gpu = view["pools"]
    assert (gpu["name"], gpu["tiers"], gpu["allocatable"]["cpu"], gpu["requested"]["cpu"]
            ) == ("gpu", ["reserved"], "4", "1")
    assert general["used"]["cpu"] == "1"  # c and d have no metrics: 0


def test_an_unreadable_cluster_says_why() -> None:
    view = cluster_view(cluster_cr("west"), Reading("west", 0.0, error="connection refused"))
    assert (view["reachable"], view["problem"]) == (False, "connection refused")
    assert "pools" not in view


def test_a_project_per_tier_limit_requested_and_used_across_clusters() -> None:
    west = reading("west", [node("w1")], [pod("z", "shop", cpu="4", node="w1")], (),
                   None)  # metrics API not read: used unknown
    view = project_view(project_cr("shop", {"reserved": {"cpu": "20"}}),
                        {"east": EAST, "west": west,
                         "gone": Reading("gone", 0.0, error="refused")})
    reserved = view["tiers"]["reserved"]
    assert reserved["limit"] == {"cpu": "20"}
    assert reserved["requested"]["cpu"] == "10"  # a 2 + b 1 + e 3 (pending) + z 4
    assert reserved["used"] is None  # west's usage cannot be read
    assert reserved["clusters"]["east"] == {
        "hard": {"cpu": "10", "pods": "100"},
        "requested": {"cpu": "6", "memory": "3Gi", "pods": "3"},
        "used": {"cpu": "1250m", "memory": "200Mi"}}
    assert view["tiers"]["preemptible"] == {"limit": None, "requested": {}, "used": {},
                                            "clusters": {}}
    assert view["unreadable"] == ["gone"]
