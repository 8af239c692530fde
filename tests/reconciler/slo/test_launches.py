"""The launch SLI of real rollouts: from pincompile's apply of a reserved-tier Deployment
to its first new pod Ready; a change that needs no new pod is no launch; a rollout that
never gets a pod Ready is a failure; other tiers are not followed."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from reconciler.model import ClusterReport, ObjectRef, PassReport
from reconciler.slo import launches
from reconciler.slo.launches import LaunchTracker, Rollout
from tests.support.kube_fake import FakeAccess, FakeCluster

NAMES = itertools.count()


def deployment(tier: str = "reserved", applied: str = "2026-11-28T12:00:00Z", replicas: int = 2,
               status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "api", "namespace": "shop", "generation": 3,
                         "labels": {"pincompute.io/tier": tier},
                         "managedFields": [
                             {"manager": "kube-controller-manager", "operation": "Update",
                              "time": "2026-11-28T12:00:09Z"},
                             {"manager": "pincompile", "operation": "Apply", "time": applied}]},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "api"}}},
            "status": status or {"observedGeneration": 2}}


def pod(created: str, ready: str | None) -> dict[str, Any]:
    conditions = [{"type": "Ready", "status": "True", "lastTransitionTime": ready}] if ready \
        else [{"type": "Ready", "status": "False"}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"api-{next(NAMES)}", "namespace": "shop",
                         "labels": {"app": "api"}, "creationTimestamp": created},
            "status": {"conditions": conditions}}


def member(obj: dict[str, Any], pods: list[dict[str, Any]]) -> FakeAccess:
    """A member cluster holding the Deployment and its pods as given."""
    cluster = FakeCluster("use1a")
    for stored in (obj, *pods):
        cluster.put(stored)
    return FakeAccess("use1a", cluster)


def follow(conn: FakeAccess, seen_ago: float = 0.0) -> tuple[bool, list[Any]]:
    recorded: list[Any] = []
    tracker = LaunchTracker(lambda _c: conn, lambda *a: recorded.append(a))
    rollout = Rollout("use1a", "shop", "api", launches.time.monotonic() - seen_ago)
    return tracker.check(rollout), recorded


def test_the_first_new_pod_ready_ends_the_launch() -> None:
    conn = member(deployment(), [pod("2026-11-28T11:00:00Z", "2026-11-28T11:00:05Z"),  # old pod
                               pod("2026-11-28T12:00:01Z", "2026-11-28T12:00:14Z"),
                               pod("2026-11-28T12:00:01Z", "2026-11-28T12:00:21Z")])
    done, recorded = follow(conn)
    assert done and recorded == [("use1a", "reserved", 14.0)]
    assert conn.stats.by_verb == {"get": 1, "list": 1} and conn.stats.lists == {"pods": 1}


def test_no_new_pod_yet_is_followed_on_then_a_failure_past_the_limit() -> None:
    conn = member(deployment(), [pod("2026-11-28T12:00:01Z", None)])
    assert follow(conn) == (False, [])
    done, recorded = follow(conn, seen_ago=launches.LIMIT + 1)
    assert done and recorded == [("use1a", "reserved", None)]


@pytest.mark.parametrize("obj", [
    deployment(status={"observedGeneration": 3, "updatedReplicas": 2, "availableReplicas": 2}),
    deployment(replicas=0),
])
def test_a_change_that_needs_no_new_pod_is_no_launch(obj: dict[str, Any]) -> None:
    assert follow(member(obj, [pod("2026-11-28T11:00:00Z", "2026-11-28T11:00:05Z")])) == (
        True, [])


def test_other_tiers_are_not_followed() -> None:
    conn = member(deployment(tier="ondemand"), [])
    assert follow(conn) == (True, []) and conn.stats.by_verb == {"get": 1}


def test_a_pass_hands_over_its_written_deployments_only() -> None:
    tracker = LaunchTracker(lambda _c: None, lambda *a: None)
    ref = ObjectRef("use1a", "apps/v1", "Deployment", "shop", "api")
    service = ObjectRef("use1a", "v1", "Service", "shop", "api")
    tracker.observe(PassReport("abc", clusters={"use1a": ClusterReport(
        "use1a", created=[service], updated=[ref])}))
    assert list(tracker._following) == [("use1a", "shop", "api")]
