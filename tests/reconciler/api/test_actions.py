"""The actions' HTTP contract without a cluster: each action is a verb of its own (403
without it, audited), kinds an action does not apply to are 409 with what to do instead,
a change of desired state is 409 with the spec edit to commit, and without the host the
actions answer 503. Restart and pause against real clusters: test_actions_e2e.py."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from pincompile.cli import cli
from reconciler.api.access import RateLimits
from reconciler.api.app import Gateway, create_app
from reconciler.store import Store
from tests.support.api_fakes import Statuses, TablePolicy

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
