"""The actions' HTTP contract without a cluster: each action is a verb of its own (403
without it, audited), kinds an action does not apply to are 409 with what to do instead,
a change of desired state is 409 with the spec edit to commit, and without the host the
actions answer 503. Restart and pause against real clusters: test_actions_e2e.py."""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from pincompile.cli import cli
from reconciler.api.access import RateLimits
from reconciler.api.actions import Operations
from reconciler.api.app import Gateway, create_app
from reconciler.store import Store
from tests.support.api_fakes import Statuses, TablePolicy
from tests.support.kube_fake import FakeAccess, FakeCluster

APPS = {("PinApp", "shop", "web"): {"phase": "Healthy", "clusters": [{"name": "east"}]},
        ("PinterestJobSet", "shop", "index"): {"phase": "Healthy"},
        ("PinPod", "shop", "notebook"): {"phase": "Healthy"}}
KINDS = ("PinApp", "PinterestJobSet", "PinPod")


@pytest.fixture
def client(tmp_path: Path) -> TestClient:
    store = Store.open(f"sqlite:///{tmp_path / 'insight.db'}")
    grants = {("alice", action, kind, "shop") for kind in KINDS
              for action in ("read", "restart", "rollout", "rerun", "restart-container")}
    policy = TablePolicy({"alice-token": "alice", "carol-token": "carol"},
                         grants | {("carol", "read", "PinApp", "shop")})
    return TestClient(create_app(Gateway(apps=Statuses(APPS), store=store, access=policy,
                                         limits=RateLimits(1000, 1000))))


def post(client: TestClient, path: str, token: str = "alice-token", **body: object) -> Any:
    return client.post(f"/api/v1/apps/{path}", json=body or None,
                       headers={"Authorization": f"Bearer {token}"})


@pytest.mark.parametrize("action", ["restart", "rollout/pause", "rollout/resume"])
def test_reading_an_app_is_not_enough_to_act_on_it_and_the_refusal_is_audited(
        client: TestClient, action: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="pincompile.api.audit"):
        refused = post(client, f"PinApp/shop/web/{action}", "carol-token")
    assert refused.status_code == 403, refused.text
    line = json.loads(caplog.records[-1].getMessage())
    assert (line["user"], line["method"], line["status"]) == ("carol", "POST", 403)
    assert line["path"] == f"/api/v1/apps/PinApp/shop/web/{action}"


def test_kinds_an_action_does_not_fit_are_409_with_what_to_do_instead(
        client: TestClient) -> None:
    jobset = post(client, "PinterestJobSet/shop/index/restart")
    assert jobset.status_code == 409 and "rerun" in jobset.json()["detail"]
    pod = post(client, "PinPod/shop/notebook/rollout/pause")
    assert pod.status_code == 409 and "PinApp" in pod.json()["detail"]


def test_without_the_host_an_allowed_action_answers_503(client: TestClient) -> None:
    assert post(client, "PinApp/shop/web/restart").status_code == 503


def test_a_change_of_desired_state_is_answered_with_the_spec_edit_to_commit(
        client: TestClient) -> None:
    stop = post(client, "PinApp/shop/web/stop", "carol-token")
    assert stop.status_code == 409
    body = stop.json()
    assert (body["field"], body["value"], body["command"]) == (
        "spec.replicas", 0, "pincompile set replicas PinApp/shop/web 0")
    scale = post(client, "PinApp/shop/web/scale", replicas=6).json()
    assert scale["command"] == "pincompile set replicas PinApp/shop/web 6"
    image = post(client, "PinApp/shop/web/image", container="main", image="r/web:2").json()
    assert image["command"] == "pincompile set image PinApp/shop/web main=r/web:2"
    assert image["field"] == "spec.template.containers[main].image"
    bad = post(client, "PinApp/shop/web/scale", replicas=-1)
    assert bad.status_code == 422
    assert post(client, "PinApp/ads/web/stop").status_code == 403


def test_the_cli_exits_1_when_refused_and_3_when_the_server_is_unreachable() -> None:
    runner = CliRunner()
    gone = runner.invoke(cli, ["restart", "PinApp/shop/web", "--server", "http://127.0.0.1:9"])
    assert gone.exit_code == 3, gone.output
    usage = runner.invoke(cli, ["rollout", "pause", "PinApp/shop"])
    assert usage.exit_code == 2, usage.output


def test_rerun_fits_jobs_only_and_restart_container_says_exactly_what_happens(
        client: TestClient) -> None:
    refused = post(client, "PinApp/shop/web/rerun")
    assert refused.status_code == 409 and "restart" in refused.json()["detail"]
    container = post(client, "PinPod/shop/notebook/restart-container")
    assert container.status_code == 501
    assert "Nothing was changed" in container.json()["detail"]
    assert post(client, "PinApp/shop/web/restart-container").status_code == 409
    assert post(client, "PinPod/shop/notebook/restart-container", "carol-token"
                ).status_code == 403


@pytest.mark.parametrize("body", [b'{"replicas": NaN}', b'{"replicas": 1e309}',
                                  b'{"replicas": -Infinity}', b'{"replicas": "6"',
                                  b'[1, 2]'])
def test_a_body_is_judged_only_for_a_caller_who_may_act_and_never_with_a_500(
        client: TestClient, body: bytes) -> None:
    def send(token: str) -> Any:
        return client.post("/api/v1/apps/PinApp/shop/web/scale", content=body,
                           headers={"Authorization": f"Bearer {token}",
                                    "Content-Type": "application/json"})

    stranger = client.post("/api/v1/apps/PinApp/ads/web/scale", content=body,
                           headers={"Authorization": "Bearer carol-token",
                                    "Content-Type": "application/json"})
    assert stranger.status_code == 403, stranger.text
    judged = send("carol-token")
    assert judged.status_code == 422, judged.text
    assert judged.json()["detail"][0]["loc"][0] == "body"


def test_a_name_no_app_can_have_is_a_422_naming_the_field_before_the_host_is_asked(
        tmp_path: Path) -> None:
    host = FakeAccess("host", FakeCluster("host"))
    store = Store.open(f"sqlite:///{tmp_path / 'insight.db'}")
    policy = TablePolicy({"alice-token": "alice"},
                         {("alice", action, "PinApp", "shop")
                          for action in ("read", "restart", "rollout")})
    app = create_app(Gateway(apps=Statuses(APPS), store=store, access=policy,
                             limits=RateLimits(1000, 1000), host=host,  # type: ignore[arg-type]
                             pods=object()))
    client = TestClient(app)
    for action in ("restart", "rollout/pause", "stop"):
        answer = client.post(f"/api/v1/apps/PinApp/shop/x%25y/{action}",
                             headers={"Authorization": "Bearer alice-token"})
        assert answer.status_code == 422, answer.text
        assert answer.json()["detail"].startswith("name: 'x%y' is not")
    assert not host.stats.by_verb, "the host was asked"


def test_one_tenant_cannot_take_every_place_for_restarts_in_a_server() -> None:
    operations = Operations(most=8, per_user=2, per_project=4)
    release = threading.Event()
    started = [operations.start(("PinApp", "ads", f"web-{i}"), "restart", release.wait,
                                "mallory") for i in range(3)]
    assert started[:2] == [None, None]
    assert started[2] == "mallory has 2 actions running in this server already"
    for i in range(2, 6):  # the same project under other names: its share is 4
        operations.start(("PinApp", "ads", f"web-{i}"), "restart", release.wait, f"m{i}")
    assert operations.refusal(("PinApp", "ads", "web-9"), "m9") == \
        "4 actions of project ads are running in this server already"
    assert operations.refusal(("PinApp", "shop", "cart"), "alice") is None
    assert operations.start(("PinApp", "shop", "cart"), "restart", release.wait, "alice") \
        is None
    release.set()
