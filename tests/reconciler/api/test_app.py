"""The gateway's HTTP contract: auth (401), authorization per kind and project (403),
rate limits (429 + Retry-After), filters and paging, the insight store, the audit log,
and the OpenAPI document checked in under docs/."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from reconciler.api.access import RateLimits
from reconciler.api.app import Gateway, create_app
from reconciler.api.openapi import document
from reconciler.store import EventRecord, RevisionRecord, Store
from tests.support.api_fakes import Statuses, TablePolicy

ROOT = Path(__file__).resolve().parents[3]
T0 = datetime(2026, 11, 1, tzinfo=UTC)


def status(phase: str, *clusters: str) -> dict[str, Any]:
    return {"phase": phase, "ready": "2/2", "replicas": 2, "readyReplicas": 2,
            "clusters": [{"name": c, "phase": phase, "replicas": 1, "readyReplicas": 1,
                          "observedRevision": "abc"} for c in clusters],
            "rollout": {"phase": "Complete"}, "conditions": [{"type": "Ready"}],
            "lastAppliedRevision": "abc", "managedFields": "noise"}


APPS = {("PinApp", "shop", f"web-{i:02}"): status("Healthy", "east", "west") for i in range(7)}
APPS[("PinApp", "shop", "broken")] = status("Degraded", "east")
APPS[("PinApp", "ads", "secret")] = status("Healthy", "east")
APPS[("PinterestService", "shop", "api")] = status("Healthy", "west")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store.open(f"sqlite:///{tmp_path / 'insight.db'}")
    yield opened
    opened.close()


@pytest.fixture
def client(store: Store) -> TestClient:
    shop = {("alice", action, kind, "shop") for action in ("list", "read")
            for kind in ("PinApp", "PinterestService")}
    policy = TablePolicy({"alice-token": "alice", "bob-token": "bob"},
                         shop | {("bob", "list", "PinApp", "ads")})
    gateway = Gateway(apps=Statuses(APPS), store=store, access=policy,
                      limits=RateLimits(qps=1000, burst=1000))
    return TestClient(create_app(gateway))


def get(client: TestClient, path: str, token: str = "alice-token", **params: Any) -> Any:
    return client.get(f"/api/v1{path}", params=params,
                      headers={"Authorization": f"Bearer {token}"})


def test_a_call_without_a_valid_bearer_token_is_401(client: TestClient) -> None:
    assert client.get("/api/v1/apps").status_code == 401
    refused = get(client, "/apps", token="stolen")
    assert refused.status_code == 401 and refused.headers["WWW-Authenticate"] == "Bearer"


def test_a_tenant_lists_only_the_projects_it_may_list(client: TestClient) -> None:
    names = {(a["kind"], a["project"], a["name"]) for a in get(client, "/apps").json()["items"]}
    assert ("PinApp", "ads", "secret") not in names and len(names) == 9
    bob = get(client, "/apps", token="bob-token").json()["items"]
    assert [(a["project"], a["name"]) for a in bob] == [("ads", "secret")]


def test_another_projects_app_is_403_whether_or_not_it_exists(client: TestClient) -> None:
    for name in ("secret", "no-such-app"):
        for tail in ("", "/events", "/history"):
            assert get(client, f"/apps/PinApp/ads/{name}{tail}").status_code == 403


def test_filters_and_pages_return_every_app_exactly_once(client: TestClient) -> None:
    assert [a["name"] for a in get(client, "/apps", phase="Degraded").json()["items"]] == \
        ["broken"]
    assert [a["name"] for a in get(client, "/apps", cluster="west", kind="PinterestService")
            .json()["items"]] == ["api"]
    seen, token = [], None
    while True:
        page = get(client, "/apps", limit=3, **({"continue": token} if token else {})).json()
        assert len(page["items"]) <= 3
        seen += [a["name"] for a in page["items"]]
        token = page.get("continue")
        if not token:
            break
    assert sorted(seen) == sorted(k[2] for k in APPS if k[1] == "shop") and len(seen) == 9
    assert get(client, "/apps", **{"continue": "%%%"}).status_code == 400
    assert get(client, "/apps", limit=100000).status_code == 422


def test_one_app_has_its_clusters_rollout_and_no_noise(client: TestClient) -> None:
    app = get(client, "/apps/PinApp/shop/broken").json()
    assert app["phase"] == "Degraded" and app["clusters"][0]["name"] == "east"
    assert app["rollout"] == {"phase": "Complete"} and "managedFields" not in app
    assert get(client, "/apps/PinApp/shop/nope").status_code == 404
    assert get(client, "/apps/Secret/shop/x").status_code == 404


def test_events_and_history_come_from_the_store(client: TestClient, store: Store) -> None:
    app = ("PinApp", "shop", "broken")
    store.add_events([EventRecord(app=app, reason="RolloutHalted", message="zone b failed",
                                  uid="e1", cluster="east", warning=True, last_seen=T0)])
    store.add_revision(RevisionRecord(app=app, revision="abc", result="unconverged",
                                      applied_at=T0, commit="f" * 40, push="d-1"))
    (event,) = get(client, "/apps/PinApp/shop/broken/events").json()
    assert (event["reason"], event["type"], event["cluster"]) == ("RolloutHalted", "Warning",
                                                                  "east")
    assert get(client, "/apps/PinApp/shop/broken/events",
               since=(T0 + timedelta(seconds=1)).isoformat()).json() == []
    (revision,) = get(client, "/apps/PinApp/shop/broken/history").json()
    assert (revision["result"], revision["push"]) == ("unconverged", "d-1")


def test_a_user_over_the_rate_limit_gets_429_with_retry_after(store: Store) -> None:
    gateway = Gateway(apps=Statuses(APPS), store=store,
                      access=TablePolicy({"t": "eve"}, set()),
                      limits=RateLimits(qps=0.1, burst=2))
    client = TestClient(create_app(gateway))
    codes = [get(client, "/apps", token="t").status_code for _ in range(3)]
    assert codes == [200, 200, 429]
    assert int(get(client, "/apps", token="t").headers["Retry-After"]) >= 1


def test_every_call_is_audited_with_who_what_and_result(
        client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="pincompile.api.audit"):
        get(client, "/apps/PinApp/ads/secret")
        get(client, "/apps", token="stolen")
    lines = [json.loads(r.getMessage()) for r in caplog.records]
    assert [(line["user"], line["path"], line["status"]) for line in lines] == [
        ("alice", "/api/v1/apps/PinApp/ads/secret", 403), (None, "/api/v1/apps", 401)]


def test_the_checked_in_openapi_document_matches_the_served_routes(client: TestClient) -> None:
    served = client.get("/api/v1/openapi.json").json()
    assert served == document()
    checked_in = json.loads((ROOT / "docs/api/openapi.json").read_text())
    assert checked_in == served, "regenerate: make openapi"
