"""The rotation routes' HTTP contract without a cluster: authorized as ``update
clusters/rotation``, one rotation at a time, pause and resume by annotations of their own
field managers, bad input refused before anything is written. Against real clusters:
tests/reconciler/serve/test_nodes_e2e.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from pincompile.cli import cli
from reconciler.api.access import RateLimits
from reconciler.api.app import Gateway, create_app
from reconciler.rotation import plan
from reconciler.store import Store
from tests.support.api_fakes import FakeHost, Statuses, TablePolicy


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch) -> FakeHost:
    return FakeHost().install(monkeypatch)


@pytest.fixture
def client(tmp_path: Path, host: FakeHost) -> TestClient:
    store = Store.open(f"sqlite:///{tmp_path / 'insight.db'}")
    policy = TablePolicy({"ops-token": "ops", "dev-token": "dev"},
                         {("ops", "rotate", "Cluster", ""), ("ops", "read", "Cluster", ""),
                          ("dev", "read", "Cluster", "")})
    return TestClient(create_app(Gateway(apps=Statuses({}), store=store, access=policy,
                                         limits=RateLimits(1000, 1000),
                                         host=object())))  # type: ignore[arg-type]


def call(client: TestClient, tail: str = "", token: str = "ops-token", method: str = "POST",
         **params: Any) -> Any:
    return client.request(method, f"/api/v1/clusters/east/rotation{tail}", params=params,
                          headers={"Authorization": f"Bearer {token}"})


def test_reading_a_cluster_is_not_enough_to_rotate_it(client: TestClient) -> None:
    assert call(client, token="dev-token").status_code == 403
    assert call(client, "/pause", token="dev-token").status_code == 403
    seen = call(client, token="dev-token", method="GET")
    assert seen.status_code == 200 and seen.json()["status"] is None


def test_a_rotation_is_requested_once_until_it_completes(client: TestClient,
                                                         host: FakeHost) -> None:
    asked = call(client, pool="general", batch=2, pause="2m")
    assert asked.status_code == 202, asked.text
    request = plan.parse_request(host.cr["metadata"]["annotations"][plan.REQUEST_ANNOTATION])
    assert request is not None
    assert (request.by, request.pool, request.batch, request.pause) == ("ops", "general", 2,
                                                                        "2m")
    assert asked.json()["request"]["id"] == request.id
    again = call(client)
    assert again.status_code == 409 and "has not started yet" in again.json()["detail"]
    host.cr["status"]["rotation"] = {"id": request.id, "phase": "Running",
                                     "nodes": [{"name": "n1", "state": "Replaced"},
                                               {"name": "n2", "state": "Draining"}]}
    assert "1 of 2 node(s) left" in call(client).json()["detail"]
    host.cr["status"]["rotation"]["phase"] = "Complete"
    assert call(client).status_code == 202
    assert call(client, "/pause", token="ops-token").status_code == 200


def test_pause_and_resume_touch_only_their_own_annotation(client: TestClient,
                                                          host: FakeHost) -> None:
    none = call(client, "/pause")
    assert none.status_code == 409 and "no rotation of east is in progress" in none.text
    call(client)
    paused = call(client, "/pause")
    assert paused.status_code == 200 and paused.json()["pausedBy"] == "ops"
    annotations = host.cr["metadata"]["annotations"]
    assert annotations[plan.PAUSED_BY_ANNOTATION] == "ops"
    assert "paused already" in call(client, "/pause").json()["message"]
    resumed = call(client, "/resume")
    assert resumed.json()["pausedBy"] is None and plan.REQUEST_ANNOTATION in annotations
    assert plan.PAUSED_BY_ANNOTATION not in annotations


@pytest.mark.parametrize("params", [{"pause": "soon"}, {"pause": "25h"}, {"batch": 0},
                                    {"batch": 101}, {"pool": "x" * 64}])
def test_bad_input_is_refused_before_anything_is_written(client: TestClient, host: FakeHost,
                                                         params: dict[str, Any]) -> None:
    assert call(client, **params).status_code == 422
    assert host.cr["metadata"]["annotations"] == {}


def test_an_unknown_cluster_is_404(client: TestClient) -> None:
    answer = client.get("/api/v1/clusters/west/rotation",
                        headers={"Authorization": "Bearer ops-token"})
    assert answer.status_code == 404


def test_the_cli_refuses_mixed_options_and_says_when_the_server_is_gone() -> None:
    runner = CliRunner()
    mixed = runner.invoke(cli, ["rotate", "east", "--status", "--suspend"])
    assert mixed.exit_code == 2 and "at most one of" in mixed.output
    both = runner.invoke(cli, ["rotate", "east", "--resume", "--batch", "2"])
    assert both.exit_code == 2
    gone = runner.invoke(cli, ["rotate", "east", "--server", "http://127.0.0.1:9"])
    assert gone.exit_code == 3, gone.output
