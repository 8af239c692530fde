"""serve's round of remediation and rotation: only the clusters this process leads, only
those whose Cluster asks for either, each status under its own field manager and only
when it changed, and a broken policy said once."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest

from reconciler.clients import write
from reconciler.remediation.metrics import NodeMetrics
from reconciler.rotation import plan
from reconciler.serve.nodes import NodeCare, led_by
from tests.support.fake_nodes import FakeCluster, FakeWatch, Recorded

POLICY = {"signals": [{"condition": "KernelDeadlock", "after": "1m"}]}


def cluster_cr(name: str, spec: dict[str, Any], annotations: dict[str, str] | None = None
               ) -> dict[str, Any]:
    return {"apiVersion": "pincompute.io/v1", "kind": "Cluster",
            "metadata": {"name": name, "annotations": annotations or {}}, "spec": spec}


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(write, "apply", lambda _conn, body, *, manager, **_: found.append(
        (manager, body)))
    return found


def care_of(crs: list[dict[str, Any]], members: dict[str, FakeCluster],
            led: set[str] | None = None, mode: str = "on") -> NodeCare:
    host: Any = SimpleNamespace(name="host")
    care = NodeCare(host, None, lambda names: set(names) if led is None else led & set(names),
                    Recorded(), NodeMetrics(), mode=mode)  # type: ignore[arg-type]
    care.clusters = FakeWatch({("Cluster", "", c["metadata"]["name"]): c for c in crs})  # type: ignore[assignment]
    care.clusters.synced.set()
    care._members = {name: fake.member for name, fake in members.items()}
    return care


def test_only_led_clusters_that_ask_for_it_are_looked_at(
        monkeypatch: pytest.MonkeyPatch, writes: list[tuple[str, dict[str, Any]]]) -> None:
    east = FakeCluster(3, {"web": 3}).install(monkeypatch)
    care = care_of([cluster_cr("east", {"remediation": POLICY}),
                    cluster_cr("west", {"remediation": POLICY}),
                    cluster_cr("plain", {})], {"east": east}, led={"east", "plain"})
    care.tick()
    care.tick()
    assert [(m, b["metadata"]["name"], list(b["status"])) for m, b in writes] == [
        ("pincompile-remediation", "east", ["remediation"])]


def test_a_rotation_request_is_run_and_its_status_kept_under_its_own_manager(
        monkeypatch: pytest.MonkeyPatch, writes: list[tuple[str, dict[str, Any]]]) -> None:
    east = FakeCluster(2, {"web": 2}).install(monkeypatch)
    request = plan.Request("r1", "ada").to_json()
    care = care_of([cluster_cr("east", {}, {plan.REQUEST_ANNOTATION: request})],
                   {"east": east}, mode="off")
    care.tick()
    manager, body = writes[-1]
    assert manager == plan.STATUS_MANAGER
    assert body["status"]["rotation"]["nodes"][0]["state"] == "Draining"


def test_a_policy_the_host_holds_wrongly_is_said_once(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        writes: list[tuple[str, dict[str, Any]]]) -> None:
    care = care_of([cluster_cr("east", {"remediation": {"signals": []}})], {})
    with caplog.at_level(logging.WARNING, logger="pincompile.nodes"):
        care.tick()
        care.tick()
    assert [r.getMessage().split(":")[0] for r in caplog.records] == ["cluster east"]
    assert writes == []


def test_a_replica_leads_the_clusters_of_its_shards_only() -> None:
    class Service:
        class state:
            leading: frozenset[int] = frozenset({1})

        @staticmethod
        def scope(names: Any, leading: frozenset[int]) -> frozenset[str]:
            return frozenset(n for n in names if hash(n) % 2 in leading) | {"elsewhere"}

    led = led_by(Service)
    names = ["a", "b", "c", "d"]
    assert led(names) == {n for n in names if hash(n) % 2 == 1}
    Service.state.leading = frozenset()
    assert led(names) == set()
