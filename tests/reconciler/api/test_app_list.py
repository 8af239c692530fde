"""Listing and reading apps: the documents served (rendered once per change of the app
cache, the same documents as the models say), label selectors on the specs' labels
(`GET /api/v1/apps?selector=`, `pincompile get apps -l`), an unreadable status, a failing
call's audit line, and decisions answered from memory."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from pincompile.cli import cli as cli_main
from reconciler.api.access import Caller, RateLimits
from reconciler.api.app import Gateway, create_app
from reconciler.store import Store
from tests.support.api_fakes import Statuses, TablePolicy
from tests.support.served_api import served

AppKey = tuple[str, str, str]


def status(phase: str, ready: int = 1) -> dict[str, Any]:
    return {"phase": phase, "ready": f"{ready}/2", "replicas": 2, "readyReplicas": ready,
            "clusters": [{"name": "east", "phase": phase, "replicas": 2,
                          "readyReplicas": ready, "observedRevision": "abc"}],
            "rollout": {"phase": "Complete", "zones": [{"zone": "a", "done": True}]},
            "conditions": [{"type": "Ready", "status": "True"}],
            "lastAppliedRevision": "abc", "lastAppliedTime": "2026-11-26T09:00:00Z",
            "managedFields": "noise"}


APPS: dict[AppKey, dict[str, Any]] = {
    ("PinApp", "shop", "web"): status("Healthy", 2),
    ("PinApp", "shop", "web-canary"): status("Degraded"),
    ("PinApp", "shop", "cart"): status("Healthy", 2),
    ("PinterestService", "shop", "api"): status("Healthy", 2),
    ("PinApp", "ads", "bidder"): status("Healthy", 2),
}
LABELS: dict[AppKey, dict[str, str]] = {
    ("PinApp", "shop", "web"): {"team": "shop", "tier": "web"},
    ("PinApp", "shop", "web-canary"): {"team": "shop", "tier": "web", "canary": "true"},
    ("PinApp", "shop", "cart"): {"team": "shop", "tier": "backend"},
    ("PinterestService", "shop", "api"): {"team": "platform", "tier": "backend"},
    ("PinApp", "ads", "bidder"): {"team": "shop", "tier": "web"},
}
ALICE_SHOP = {("alice", action, kind, "shop") for action in ("list", "read")
              for kind in ("PinApp", "PinterestService")}


class Changing(Statuses):
    """A cache whose apps change: each change hands out new mappings, as HostApps does."""

    def change(self, key: AppKey, new: Mapping[str, Any]) -> None:
        self._statuses = {**self._statuses, key: new}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store.open(f"sqlite:///{tmp_path / 'insight.db'}")
    yield opened
    opened.close()


def gateway_of(store: Store, apps: Statuses | None = None,
               access: Any = None) -> Gateway:
    return Gateway(apps=apps or Statuses(APPS, LABELS), store=store,
                   access=access or TablePolicy({"alice-token": "alice"}, ALICE_SHOP),
                   limits=RateLimits(qps=1000, burst=1000))


@pytest.fixture
def client(store: Store) -> TestClient:
    return TestClient(create_app(gateway_of(store)))


def get(client: TestClient, path: str, **params: Any) -> Any:
    return client.get(f"/api/v1{path}", params=params,
                      headers={"Authorization": "Bearer alice-token"})


def names(client: TestClient, **params: Any) -> list[str]:
    answer = get(client, "/apps", **params)
    assert answer.status_code == 200, answer.text
    return [f"{a['kind']}/{a['project']}/{a['name']}" for a in answer.json()["items"]]


CANARY_SUMMARY = {
    "kind": "PinApp", "project": "shop", "name": "web-canary", "phase": "Degraded",
    "ready": "1/2", "replicas": 2, "readyReplicas": 1,
    "clusters": [{"name": "east", "phase": "Degraded", "replicas": 2, "readyReplicas": 1,
                  "message": ""}],
    "message": "", "observedRevision": "", "lastAppliedRevision": "abc",
    "lastAppliedTime": "2026-11-26T09:00:00Z", "statusTime": "",
    "rollout": {"phase": "Complete", "zones": [{"zone": "a", "done": True}]},
    "failover": None, "conditions": [{"type": "Ready", "status": "True"}]}


def test_the_list_and_one_app_are_the_documents_of_the_api(client: TestClient) -> None:
    listed = get(client, "/apps", phase="Degraded")
    assert listed.headers["content-type"] == "application/json"
    assert listed.json() == {"apiVersion": "pincompute.io/v1", "kind": "AppList",
                             "items": [CANARY_SUMMARY], "continue": None}
    one = get(client, "/apps/PinApp/shop/web-canary").json()
    assert one == {**CANARY_SUMMARY, "spec": None, "source": "", "placement": None,
                   "history": [], "scaling": None}
    assert list(one) == [*CANARY_SUMMARY, "spec", "source", "placement", "history", "scaling"]


def test_a_selector_matches_the_labels_of_the_apps_specs(client: TestClient) -> None:
    assert names(client, selector="tier=web") == ["PinApp/shop/web", "PinApp/shop/web-canary"]
    assert names(client, selector="tier=web,!canary") == ["PinApp/shop/web"]
    assert names(client, selector="tier in (backend),team!=shop") == \
        ["PinterestService/shop/api"]
    assert names(client, selector="canary") == ["PinApp/shop/web-canary"]
    assert names(client, selector="tier notin (web)", kind="PinApp") == ["PinApp/shop/cart"]
    assert names(client, selector="team=nobody") == []
    # ads/bidder matches tier=web too, but alice may not list project ads
    assert names(client, selector="tier=web", project="ads") == []


def test_paging_through_a_selection_returns_each_app_once(client: TestClient) -> None:
    seen, token = [], None
    while True:
        page = get(client, "/apps", selector="team=shop", limit=1,
                   **({"continue": token} if token else {})).json()
        seen += [a["name"] for a in page["items"]]
        token = page["continue"]
        if not token:
            break
    assert seen == ["cart", "web", "web-canary"]


def test_a_selector_that_is_not_one_is_a_located_400(client: TestClient) -> None:
    refused = get(client, "/apps", selector="tier in (web")
    assert refused.status_code == 400
    assert "cannot read 'tier in (web'" in refused.json()["detail"], refused.json()
    assert get(client, "/apps", selector="x" * 5000).status_code == 422


def test_a_changed_app_is_served_at_once_and_only_it_is_rendered_again(store: Store) -> None:
    apps = Changing(APPS, LABELS)
    gateway = gateway_of(store, apps)
    client = TestClient(create_app(gateway))
    assert get(client, "/apps/PinApp/shop/web").json()["phase"] == "Healthy"
    assert names(client, phase="Failed") == []
    kept = gateway.index.snapshot().by_key[("PinApp", "shop", "cart")]
    apps.change(("PinApp", "shop", "web"), status("Failed", 0))
    assert get(client, "/apps/PinApp/shop/web").json()["phase"] == "Failed"
    assert names(client, phase="Failed") == ["PinApp/shop/web"]
    assert gateway.index.snapshot().by_key[("PinApp", "shop", "cart")] is kept


def test_a_status_the_api_cannot_read_is_unknown_and_says_why(store: Store) -> None:
    broken = {("PinApp", "shop", "web"): {"phase": "Healthy", "clusters": "east"}}
    client = TestClient(create_app(gateway_of(store, Statuses(broken))))
    one = get(client, "/apps/PinApp/shop/web")
    assert one.status_code == 200
    assert one.json()["phase"] == "Unknown"
    assert one.json()["message"].startswith("the app's status on the host is not readable: "
                                            "clusters:"), one.json()
    assert names(client) == ["PinApp/shop/web"]


def test_a_call_that_fails_inside_the_server_is_audited_as_500(
        store: Store, caplog: pytest.LogCaptureFixture) -> None:
    class Failing(Statuses):
        def statuses(self) -> Mapping[AppKey, Mapping[str, Any]]:
            raise RuntimeError("a bug")

    client = TestClient(create_app(gateway_of(store, Failing({}))),
                        raise_server_exceptions=False)
    with caplog.at_level(logging.INFO, logger="pincompile.api.audit"):
        assert get(client, "/apps").status_code == 500
    lines = [json.loads(r.getMessage()) for r in caplog.records]
    assert [(line["user"], line["path"], line["status"]) for line in lines] == [
        ("alice", "/api/v1/apps", 500)]


class Remembered(TablePolicy):
    """Answers it knows are given from memory; asking counts (the host's reviews)."""

    def __init__(self) -> None:
        super().__init__({"alice-token": "alice"}, ALICE_SHOP)
        self.asked = 0

    def known_caller(self, token: str) -> Caller | None:
        return Caller("alice") if token == "alice-token" else None

    def known_decision(self, caller: Caller, action: str, kind: str, project: str
                       ) -> bool | None:
        return (caller.user, action, kind, project) in self.grants if project == "shop" \
            else None

    def authenticate(self, token: str) -> Caller:
        self.asked += 1
        return super().authenticate(token)

    def allowed(self, caller: Caller, action: str, kind: str, project: str) -> bool:
        self.asked += 1
        return super().allowed(caller, action, kind, project)


def test_known_answers_are_given_without_asking_and_unknown_ones_are_asked(
        store: Store) -> None:
    access = Remembered()
    client = TestClient(create_app(gateway_of(store, access=access)))
    assert names(client, project="shop")[0] == "PinApp/shop/cart"
    assert get(client, "/apps/PinApp/shop/web").status_code == 200
    assert access.asked == 0
    assert get(client, "/apps/PinApp/ads/bidder").status_code == 403
    assert access.asked == 1


# -- the CLI, through a real HTTP server --------------------------------------------------------
@pytest.fixture
def server(store: Store) -> Iterator[str]:
    with served(create_app(gateway_of(store))) as url:
        yield url


def test_get_apps_l_lists_the_apps_whose_spec_labels_match(server: str) -> None:
    env = {"PINCOMPILE_SERVER": server, "PINCOMPILE_TOKEN": "alice-token"}
    cli = CliRunner()
    done = cli.invoke(cli_main, ["get", "apps", "-l", "tier=web,!canary", "-o", "name"], env=env)
    assert (done.exit_code, done.output) == (0, "PinApp/shop/web\n")
    both = cli.invoke(cli_main, ["get", "apps", "-l", "tier in (web)", "-p", "shop",
                                 "--phase", "Degraded", "-o", "name"], env=env)
    assert (both.exit_code, both.output) == (0, "PinApp/shop/web-canary\n")
    wrong = cli.invoke(cli_main, ["get", "apps", "-l", "tier in (web"], env=env)
    assert wrong.exit_code == 2 and "cannot read" in wrong.output, wrong.output
    named = cli.invoke(cli_main, ["get", "pods", "PinApp/shop/web", "-l", "tier=web"], env=env)
    assert named.exit_code == 2 and "names one app" in named.output, named.output
