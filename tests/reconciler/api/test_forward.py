"""A port-forward through the API: the pod it reaches (as exec picks it), refusals before
the connection (401, 403 as exec's, 404, 409, 422, 429, 503), each an HTTP answer to the
handshake, and a bridged connection against a member that echoes, which leaves no
thread, slot or socket behind. Real connections against the fleet are in
test_access_e2e.py."""

from __future__ import annotations

import json
import logging
import queue
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from reconciler.api import forward_routes
from reconciler.api.access import RateLimits
from reconciler.api.app import Gateway, create_app
from reconciler.api.exec_protocol import ExecTarget, NoRunningPod, split
from reconciler.api.forward_protocol import ForwardLimits, pick_pod
from reconciler.api.models import PodList
from reconciler.model import AppKey
from reconciler.store import Store
from tests.reconciler.api.test_app import APPS
from tests.reconciler.api.test_exec import PODS, exec_policy
from tests.reconciler.api.test_exec import refusal as exec_refusal
from tests.support.api_fakes import Statuses
from tests.support.wait import wait_for

WEB = "/api/v1/apps/PinApp/shop/web-00/portforward"


def test_a_forward_reaches_the_pod_exec_would_pick() -> None:
    assert pick_pod(PODS, None, None) == ExecTarget("west", "shop", "web-b", "main")
    assert pick_pod(PODS, "east", None).pod == "web-a"
    with pytest.raises(NoRunningPod):
        pick_pod(PODS, None, "web-c")


class EchoingMember:
    """A member's port-forward of one port that sends back what it is sent (``error``:
    it refuses with that message instead)."""

    def __init__(self, port: int, error: str = "") -> None:
        self.sent: list[bytes] = []
        self._queue: queue.Queue[bytes | None] = queue.Queue()
        for channel in (0, 1):
            self._queue.put(bytes([channel, port & 0xFF, port >> 8]))
        if error:
            self._queue.put(b"\x01" + error.encode())

    def messages(self) -> Iterator[bytes]:
        while (item := self._queue.get()) is not None:
            yield item

    def send(self, message: bytes) -> None:
        self.sent.append(message)
        self._queue.put(message)

    def abort(self) -> None:
        self._queue.put(None)


class Pods:
    def pods(self, app: AppKey, clusters: Iterable[str]) -> PodList:
        wanted = set(clusters)
        return PodList(items=[p for p in PODS.items if p.cluster in wanted])

    def connection(self, cluster: str) -> Any:
        return object()

    def connect(self, clusters: Iterable[str]) -> dict[str, Any]:
        return {}


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    store = Store.open(f"sqlite:///{tmp_path / 'insight.db'}")
    yield Gateway(apps=Statuses(APPS), store=store, access=exec_policy(),
                  limits=RateLimits(qps=1000, burst=1000), pods=Pods(),
                  forward_limits=ForwardLimits(connections_per_user=1))
    store.close()


ALICE = {"Authorization": "Bearer alice-token"}


def test_the_target_is_answered_to_whoever_may_exec(gateway: Gateway) -> None:
    client = TestClient(create_app(gateway))
    found = client.get(WEB, params={"port": 8080}, headers=ALICE)
    assert found.json() == {"cluster": "west", "namespace": "shop", "pod": "web-b",
                            "port": 8080}
    assert client.get(WEB, params={"port": 8080, "cluster": "east"},
                      headers=ALICE).json()["pod"] == "web-a"
    bob = client.get(WEB, params={"port": 8080}, headers={"Authorization": "Bearer bob-token"})
    assert bob.status_code == 403 and "web-b" not in bob.text
    assert client.get(WEB, params={"port": 8080}).status_code == 401
    assert client.get(WEB, params={"port": 8080, "pod": "web-c"}, headers=ALICE
                      ).status_code == 409
    assert client.get(WEB, params={"port": 8080, "pod": "web-z"}, headers=ALICE
                      ).status_code == 404
    assert client.get(WEB, params={"port": 0}, headers=ALICE).status_code == 422


def test_a_named_port_is_the_number_a_container_of_that_pod_declares(gateway: Gateway
                                                                     ) -> None:
    client = TestClient(create_app(gateway))
    assert client.get(WEB, params={"port": "http"}, headers=ALICE).json()["port"] == 8080
    assert client.get(WEB, params={"port": "admin"}, headers=ALICE).json()["port"] == 9901
    missing = client.get(WEB, params={"port": "grpc"}, headers=ALICE)
    assert missing.status_code == 404, missing.text
    assert "no TCP port named grpc" in missing.text and "admin (proxy 9901)" in missing.text
    udp = client.get(WEB, params={"port": "dns"}, headers=ALICE)  # forwards carry TCP only
    assert udp.status_code == 404, udp.text
    for bad in ("70000", "HTTP", "-http", "a" * 16, "http;rm"):
        assert client.get(WEB, params={"port": bad}, headers=ALICE).status_code == 422, bad
    bob = client.get(WEB, params={"port": "grpc"}, headers={"Authorization": "Bearer bob-token"})
    assert bob.status_code == 403 and "admin" not in bob.text  # no port names to strangers


def refusal(client: TestClient, query: str, token: str | None) -> tuple[int, str]:
    return exec_refusal(client, f"shop/web-00/portforward?{query}", token)


def test_a_connection_is_refused_before_it_starts(
        gateway: Gateway, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
        ) -> None:
    opened: list[int] = []
    monkeypatch.setattr(forward_routes, "open_upstream",
                        lambda *args: opened.append(1) or EchoingMember(80))
    caplog.set_level(logging.INFO, logger="pincompile.api.audit")
    client = TestClient(create_app(gateway))
    assert refusal(client, "port=80", None)[0] == 401
    assert refusal(client, "port=80", "bob-token") == \
        (403, "bob may not exec PinApp in project shop")
    assert refusal(client, "port=80&pod=web-c", "alice-token")[0] == 409
    assert refusal(client, "port=80&cluster=north", "alice-token")[0] == 404
    assert refusal(client, "port=70000", "alice-token")[0] == 422
    assert opened == [], "a refused caller reached a member"
    lines = [json.loads(r.getMessage()) for r in caplog.records
             if r.name == "pincompile.api.audit"]
    assert [(r["user"], r["status"]) for r in lines][:2] == [(None, 401), ("bob", 403)]


def forward_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("forward-")]


def test_a_connection_passes_bytes_both_ways_and_leaves_nothing_behind(
        gateway: Gateway, monkeypatch: pytest.MonkeyPatch) -> None:
    members: list[EchoingMember] = []
    monkeypatch.setattr(forward_routes, "open_upstream",
                        lambda *args: members.append(EchoingMember(8080)) or members[-1])
    client = TestClient(create_app(gateway))
    with client.websocket_connect(f"{WEB}?port=8080", headers=ALICE) as ws:
        channel, target = split(ws.receive_bytes())
        assert (channel, json.loads(target)) == (3, {
            "type": "target", "cluster": "west", "namespace": "shop", "pod": "web-b",
            "container": "main", "port": 8080})
        ws.send_bytes(b"\x00ping")
        assert ws.receive_bytes() == b"\x00ping"
        # one connection per user in this gateway: the next waits for this one to end
        assert refusal(client, "port=8080", "alice-token")[0] == 429
        # the client goes, as uvicorn tells an app (the test client's own exit cancels an
        # app still running instead): the session ends by itself and leaves nothing
        ws.close(1000)
        wait_for(lambda: gateway.forward_sessions.open("alice") == 0
                 and not forward_threads(), 5, "the forwarded connection to end",
                 interval=0.1)
    assert members[0].sent == [b"\x00ping"]


def test_the_members_refusal_and_a_bad_channel_end_a_connection(
        gateway: Gateway, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forward_routes, "open_upstream",
                        lambda *args: EchoingMember(81, "connection refused"))
    client = TestClient(create_app(gateway))
    with client.websocket_connect(f"{WEB}?port=81", headers=ALICE) as ws:
        ws.receive_bytes()  # the target
        channel, last = split(ws.receive_bytes())
        assert (channel, json.loads(last)) == (3, {"type": "error", "reason": "refused",
                                                   "message": "connection refused"})
    monkeypatch.setattr(forward_routes, "open_upstream", lambda *args: EchoingMember(81))
    with client.websocket_connect(f"{WEB}?port=81", headers=ALICE) as ws:
        ws.receive_bytes()
        ws.send_bytes(b"\x04{}")
        assert json.loads(split(ws.receive_bytes())[1])["reason"] == "bad channel"
