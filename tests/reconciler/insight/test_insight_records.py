"""A member cluster's nodes, pods, quotas and metrics, reduced to what the views read."""

from __future__ import annotations

from decimal import Decimal

from insight_helpers import metrics, node, pod, quota, reading

from reconciler.insight.records import OTHER, lean_node, lean_pod, node_record, pod_request

GI = 2**30


def test_a_pod_requests_what_the_scheduler_reserves() -> None:
    spec = {"containers": [{"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
                           {"resources": {"requests": {"cpu": "250m"}}}],
            "initContainers": [
                {"name": "proxy", "restartPolicy": "Always",
                 "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}},
                {"name": "migrate", "resources": {"requests": {"cpu": "3", "memory": "256Mi"}}}],
            "overhead": {"cpu": "10m"}}
    # containers 1.25 + the proxy 0.1 = 1.35 cpu; the migration 3 + the proxy started
    # before it 0.1 = 3.1 cpu, the larger; memory 1Gi + 128Mi beats 256Mi + 128Mi
    assert pod_request(spec) == {"cpu": Decimal("3.11"), "memory": GI + 128 * 2**20}


def test_a_pods_tier_is_its_priority_class_else_its_label_else_other() -> None:
    r = reading("c", [], [pod("a", "shop", tier="ondemand"), pod("b", "kube-system", tier=None,
                                                                 app=None)])
    assert [(p.name, p.tier, p.app) for p in r.pods] == [
        ("a", "ondemand", ("PinApp", "shop", "web")), ("b", OTHER, None)]
    assert r.pods[0].requests == {"cpu": 1, "memory": GI, "pods": 1}


def test_a_pod_that_ended_holds_nothing() -> None:
    assert lean_pod(pod("done", "shop", phase="Succeeded")) is None
    assert lean_pod(pod("up", "shop", phase="Pending", node="")) is not None


def test_a_node_names_its_pool_and_the_tiers_it_serves() -> None:
    record = node_record(lean_node(node("n1", pool="gpu", tiers=["reserved"], ready=False)))
    assert (record.pool, record.tiers, record.ready) == ("gpu", ("reserved",), False)
    assert record.allocatable == {"cpu": 8, "memory": 32 * GI, "pods": 110}
    assert "managedFields" not in lean_node(node("n1"))["metadata"]


def test_quotas_and_metrics() -> None:
    r = reading("c", [], [], (quota("shop", "reserved", "10", "2500m"),),
                [metrics("shop", "a", "250000000n", "512Mi")])
    [q] = r.quotas
    assert (q.project, q.tier, q.hard, q.used) == (
        "shop", "reserved", {"cpu": 10, "pods": 100}, {"cpu": Decimal("2.5"), "pods": 2})
    assert r.usage == {("shop", "a"): {"cpu": Decimal("0.25"), "memory": 512 * 2**20}}
