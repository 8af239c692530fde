"""``pincompile capacity --live``'s table: per cluster and node pool, what the pods request
of what the nodes allocate, every tier, and a cluster that could not be read."""

from __future__ import annotations

from reconciler.api.insight_models import ClusterInsight
from reconciler.commands.capacity_live import live_rows
from reconciler.insight.records import Reading
from reconciler.insight.views import cluster_view
from tests.reconciler.insight.insight_helpers import cluster_cr, metrics, node, pod, reading


def test_requested_of_allocatable_per_cluster_pool_and_tier() -> None:
    east = reading("east", [node("n1", cpu="8"), node("n2", cpu="8", ready=False)],
                   [pod("a", "shop", cpu="2", node="n1"),
                    pod("b", "shop", cpu="1", tier="preemptible", node="n2")],
                   usage=[metrics("shop", "a", "500m", "256Mi")])
    views = [ClusterInsight.model_validate(cluster_view(cluster_cr("east"), east)),
             ClusterInsight.model_validate(cluster_view(
                 cluster_cr("west", failover={"phase": "Lost"}),
                 Reading("west", 0.0, error="connection refused")))]
    rows = live_rows(views)
    assert rows[0] == ["CLUSTER", "FAILOVER", "POOL", "NODES", "TIER", "CPU REQUESTED",
                       "MEMORY REQUESTED", "CPU USED", "MEMORY USED"]
    assert rows[1] == ["east", "Reachable", "general", "1/2", "all", "3 of 16 (19%)",
                       "2Gi of 64Gi (3%)", "0.5", "0.2Gi"]
    assert rows[2][4:7] == ["reserved", "2", "1Gi"]
    assert rows[3][4:9] == ["preemptible", "1", "1Gi", "-", "-"]  # no sample of b yet
    assert rows[4] == ["west", "Lost", "-", "-", "-", "-", "-", "-",
                       "unreachable: connection refused"]
