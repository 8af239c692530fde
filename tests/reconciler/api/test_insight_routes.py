"""``/api/v1/projects`` and ``/api/v1/clusters``: a tenant sees its projects only, the
clusters need ``list clusters.pincompute.io``, and nothing is read for a caller who may
see nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from reconciler.api.access import RateLimits
from reconciler.api.app import Gateway, create_app
from reconciler.store import Store
from tests.reconciler.insight.insight_helpers import (
    FixedInsight,
    cluster_cr,
    node,
    pod,
    project_cr,
    reading,
)
from tests.support.api_fakes import Statuses, TablePolicy

QUOTA = {"reserved": {"cpu": "20"}}


@pytest.fixture
def insight() -> FixedInsight:
    east = reading("east", [node("n1")], [pod("a", "shop", node="n1"),
                                          pod("s", "ads", node="n1")])
    return FixedInsight([project_cr("ads", QUOTA), project_cr("shop", QUOTA)],
                        [cluster_cr("east")], {"east": east})


@pytest.fixture
def client(tmp_path: Path, insight: FixedInsight) -> TestClient:
    store = Store.open(f"sqlite:///{tmp_path / 'insight.db'}")
    policy = TablePolicy({"alice": "alice", "ops": "ops", "nobody": "nobody"},
                         {("alice", "list", "PinApp", "shop"),
                          ("ops", "list", "Cluster", ""),
                          *(("ops", "list", "PinterestJobSet", p) for p in ("ads", "shop"))})
    gateway = Gateway(apps=Statuses({}), store=store, access=policy,
                      limits=RateLimits(qps=1000, burst=1000), insight=insight)
    return TestClient(create_app(gateway))


def get(client: TestClient, path: str, token: str) -> Any:
    return client.get(f"/api/v1{path}", headers={"Authorization": f"Bearer {token}"})


def test_a_tenant_sees_its_projects_only(client: TestClient) -> None:
    items = get(client, "/projects", "alice").json()["items"]
    assert [p["name"] for p in items] == ["shop"]
    assert items[0]["tiers"]["reserved"]["requested"] == {"cpu": "1", "memory": "1Gi",
                                                          "pods": "1"}
    assert [p["name"] for p in get(client, "/projects", "ops").json()["items"]] == [
        "ads", "shop"]  # any app kind it may list counts
    assert get(client, "/projects/ads", "alice").status_code == 403
    assert get(client, "/projects/shop", "alice").json()["name"] == "shop"
    assert get(client, "/projects/none", "ops").status_code == 403


def test_nothing_is_read_for_a_caller_who_may_see_nothing(client: TestClient,
                                                         insight: FixedInsight) -> None:
    assert get(client, "/projects", "nobody").json() == {"items": []}
    assert get(client, "/projects/shop", "nobody").status_code == 403
    assert get(client, "/clusters", "nobody").status_code == 403
    assert insight.asked == []


def test_the_clusters_need_list_on_the_hosts_clusters(client: TestClient) -> None:
    assert get(client, "/clusters", "alice").status_code == 403
    [east] = get(client, "/clusters", "ops").json()["items"]
    assert (east["name"], east["reachable"], east["requested"]["cpu"]) == ("east", True, "2")


def test_without_member_clusters_the_insight_is_503(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'insight.db'}")
    gateway = Gateway(apps=Statuses({}), store=store,
                      access=TablePolicy({"ops": "ops"}, {("ops", "list", "Cluster", "")}),
                      limits=RateLimits(qps=1000, burst=1000))
    assert get(TestClient(create_app(gateway)), "/clusters", "ops").status_code == 503
