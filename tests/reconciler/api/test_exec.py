"""Which container an exec session picks, how the member API server's last status becomes
an exit code, and how a session is refused before it starts: 401, 403 (exec is a verb of
its own), 404, 400 and 503, each an HTTP answer to the WebSocket handshake, audited.
Real sessions against the fleet (echo hi, exit codes, stdin, the limits, a client that
goes) are in test_access_e2e.py."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from starlette.testclient import WebSocketDenialResponse

from reconciler.api.access import RateLimits
from reconciler.api.app import Gateway, create_app
from reconciler.api.exec_protocol import (
    ExecLimits,
    ExecQuery,
    ExecTarget,
    NoRunningPod,
    NotFound,
    check_command,
    exit_status,
    pick_target,
    split,
    status_frame,
)
from reconciler.api.models import PodList
from reconciler.api.pods import pod_summary
from reconciler.store import Store
from tests.reconciler.api.test_app import APPS
from tests.support.api_fakes import Statuses, TablePolicy


def pod(cluster: str, name: str, phase: str = "Running", ready: bool = True) -> dict:
    return {"metadata": {"name": name, "namespace": "shop"},
            "spec": {"containers": [
                {"name": "main", "ports": [{"name": "http", "containerPort": 8080}]},
                {"name": "proxy", "ports": [{"name": "admin", "containerPort": 9901},
                                            {"name": "dns", "containerPort": 53,
                                             "protocol": "UDP"}]}]},
            "status": {"phase": phase, "containerStatuses": [
                {"name": "main", "ready": ready, "state": {"running": {}}},
                {"name": "proxy", "ready": True, "state": {"running": {}}}]}}


PODS = PodList(items=[pod_summary(*args) for args in (
    ("east", pod("east", "web-a", ready=False)), ("west", pod("west", "web-b")),
    ("west", pod("west", "web-c", phase="Pending")))])


def test_a_session_picks_a_ready_running_pod_and_its_first_container() -> None:
    assert pick_target(PODS, ExecQuery(("sh",))) == ExecTarget("west", "shop", "web-b", "main")
    assert pick_target(PODS, ExecQuery(("sh",), cluster="east", container="proxy")) == \
        ExecTarget("east", "shop", "web-a", "proxy")


def test_a_session_is_refused_when_nothing_named_runs() -> None:
    with pytest.raises(NoRunningPod, match=r"1 pod.*Pending"):
        pick_target(PODS, ExecQuery(("sh",), pod="web-c"))
    with pytest.raises(NotFound, match="no pod named web-z in cluster east"):
        pick_target(PODS, ExecQuery(("sh",), pod="web-z", cluster="east"))
    with pytest.raises(NotFound, match="no container sidecar"):
        pick_target(PODS, ExecQuery(("sh",), container="sidecar"))


def test_a_command_is_needed_and_bounded() -> None:
    limits = ExecLimits(command_bytes=10)
    check_command(("echo", "hi"), limits)
    for command in ((), ("",), ("echo", "x" * 10)):
        with pytest.raises(ValueError, match="command"):
            check_command(command, limits)


@pytest.mark.parametrize(("status", "code"), [
    ({"status": "Success"}, 0),
    ({"status": "Failure", "reason": "NonZeroExitCode", "message": "command terminated",
      "details": {"causes": [{"reason": "ExitCode", "message": "42"}]}}, 42),
    ({"status": "Failure", "message": "command terminated: exit status 7"}, 7),
    ({"status": "Failure", "message": 'exec: "nope": executable file not found'}, None),
])
def test_the_member_servers_last_status_gives_the_exit_code(status: dict, code: int | None
                                                            ) -> None:
    assert exit_status(json.dumps(status).encode())[0] == code


def test_frames_carry_their_channel_in_the_first_byte() -> None:
    channel, payload = split(status_frame({"type": "exit", "exitCode": 3}))
    assert channel == 3 and json.loads(payload) == {"type": "exit", "exitCode": 3}
    assert exit_status(b"not json") == (None, "not json")
    with pytest.raises(ValueError):
        split(b"")


def exec_policy() -> TablePolicy:
    """alice may exec in shop; bob may only read it and its logs."""
    return TablePolicy({"alice-token": "alice", "bob-token": "bob"}, {
        ("alice", "exec", "PinApp", "shop"), ("bob", "read", "PinApp", "shop"),
        ("bob", "logs", "PinApp", "shop")})


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    store = Store.open(f"sqlite:///{tmp_path / 'insight.db'}")
    gateway = Gateway(apps=Statuses(APPS), store=store, access=exec_policy(),
                      limits=RateLimits(qps=1000, burst=1000))
    yield TestClient(create_app(gateway))
    store.close()


def refusal(client: TestClient, path: str, token: str | None) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with pytest.raises(WebSocketDenialResponse) as refused, \
            client.websocket_connect(f"/api/v1/apps/PinApp/{path}", headers=headers):
        pass
    return refused.value.status_code, str(refused.value.json()["detail"])


def test_exec_is_refused_before_the_session_with_an_http_status(
        client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="pincompile.api.audit")
    assert refusal(client, "shop/web-00/exec?command=sh", None)[0] == 401
    status, detail = refusal(client, "shop/web-00/exec?command=sh", "bob-token")
    assert (status, detail) == (403, "bob may not exec PinApp in project shop")
    assert refusal(client, "ads/secret/exec?command=sh", "alice-token")[0] == 403
    assert refusal(client, "shop/web-00/exec", "alice-token") == \
        (400, "command: give the command to run, e.g. command=sh&command=-c&...")
    assert refusal(client, "shop/nope/exec?command=sh", "alice-token")[0] == 404
    assert refusal(client, "shop/web-00/exec?command=sh", "alice-token") == \
        (503, "the API cannot read the member clusters")
    assert refusal(client, "shop/web-00/exec?command=sh&tty=maybe", "alice-token")[0] == 422
    lines = [json.loads(r.getMessage()) for r in caplog.records
             if r.name == "pincompile.api.audit"]
    assert [(r["user"], r["status"]) for r in lines][:3] == \
        [(None, 401), ("bob", 403), ("alice", 403)]
    assert lines[1]["path"] == "/api/v1/apps/PinApp/shop/web-00/exec"
    assert lines[1]["command"] == ["sh"]
