"""A rotation's ticks in a member cluster held in memory (tests/support/fake_nodes.py):
every node replaced once, budgets kept, and a new leader resuming where the last one
stood."""

from __future__ import annotations

from typing import Any

import pytest

from pincompile.contract import RotationPolicy
from reconciler.remediation.metrics import NodeMetrics
from reconciler.rotation.controller import Rotator
from reconciler.rotation.plan import Request
from tests.support.fake_nodes import Clock, FakeCluster, Recorded


@pytest.fixture
def clock() -> Clock:
    return Clock(60)


@pytest.fixture
def recorded() -> Recorded:
    return Recorded()


def rotator(recorded: Recorded, clock: Clock, metrics: NodeMetrics | None = None) -> Rotator:
    return Rotator(recorded, metrics or NodeMetrics(), clock)  # type: ignore[arg-type]


def run(rotor: Rotator, cluster: FakeCluster, clock: Clock, *, rounds: int = 60,
        policy: RotationPolicy | None = None, request: Request | None = None,
        stored: Any = None, paused: str | None = None, until: str = "Complete"
        ) -> tuple[dict[str, Any], list[int]]:
    """Ticks (the cluster settling and 5 s passing after each) until the rotation's phase
    is ``until``; its status and web's Ready pods after each step."""
    ready = []
    for _ in range(rounds):
        stored = rotor.tick(cluster.member, policy or RotationPolicy(),
                            request or Request("r1", "ada"), paused, stored) or stored
        ready.append(cluster.ready("web"))
        if stored["phase"] == until:
            return stored, ready
        cluster.settle()
        ready.append(cluster.ready("web"))
        clock.now += 5
    raise AssertionError(f"still {stored['phase']}: {stored['message']}")


def test_every_node_is_replaced_once_and_the_app_keeps_its_budget(
        monkeypatch: pytest.MonkeyPatch, recorded: Recorded, clock: Clock) -> None:
    cluster = FakeCluster(3, {"web": 3}, clock=clock).install(monkeypatch)
    metrics = NodeMetrics()
    status, ready = run(rotator(recorded, clock, metrics), cluster, clock)
    assert min(ready) >= 2
    assert cluster.deleted == ["node-0", "node-1", "node-2"]
    assert [(n["name"], n["state"], n["version"]) for n in status["nodes"]] == [
        (f"node-{i}", "Replaced", "v2") for i in range(3)]
    reasons = [r for r, _ in recorded.clusters]
    assert reasons.count("RotationNodeReplaced") == 3
    assert (reasons[0], reasons[-1]) == ("RotationStarted", "RotationComplete")
    assert {m[2] for m in recorded.moves} == {"rotation r1"}
    assert metrics.rotated.labels("c1")._value.get() == 3
    assert metrics.rotation_left.labels("c1")._value.get() == 0


def test_a_new_leader_resumes_from_the_host_without_replacing_a_node_twice(
        monkeypatch: pytest.MonkeyPatch, recorded: Recorded, clock: Clock) -> None:
    cluster = FakeCluster(3, {"web": 3}, clock=clock).install(monkeypatch)
    first = rotator(recorded, clock)
    stored: Any = None
    for _ in range(40):  # until the first node is replaced and the second under way
        stored = first.tick(cluster.member, RotationPolicy(), Request("r1", "ada"), None,
                            stored) or stored
        states = [n["state"] for n in stored["nodes"]]
        if states[0] == "Replaced" and states[1] != "Pending":
            break
        cluster.settle()
        clock.now += 5
    assert states[:2] == ["Replaced", "Draining"]
    status, _ready = run(rotator(recorded, clock), cluster, clock, stored=stored)
    assert cluster.deleted == ["node-0", "node-1", "node-2"]
    assert len({n["replacement"] for n in status["nodes"]}) == 3
    assert [r for r, _ in recorded.clusters].count("RotationStarted") == 1


def test_a_batch_waits_while_a_budget_allows_no_disruption(
        monkeypatch: pytest.MonkeyPatch, recorded: Recorded, clock: Clock) -> None:
    cluster = FakeCluster(3, {"web": 3}, clock=clock).install(monkeypatch)
    sick = cluster.on("node-1")[0]
    cluster.pods[sick]["status"]["ready"] = False  # web is down one already
    status, _ = run(rotator(recorded, clock), cluster, clock, until="Waiting")
    assert status["message"] == (
        "waiting before draining node-0: PodDisruptionBudget shop/web allows no "
        "disruption now (2 healthy, 2 needed) (an eviction would break it)")
    assert not cluster.nodes["node-0"]["spec"] and cluster.evictions == 0


def test_a_paused_rotation_finishes_its_batch_and_starts_no_other(
        monkeypatch: pytest.MonkeyPatch, recorded: Recorded, clock: Clock) -> None:
    cluster = FakeCluster(4, {"web": 3}, clock=clock).install(monkeypatch)
    rotor = rotator(recorded, clock)
    policy = RotationPolicy(batch=2)
    stored, _ = run(rotor, cluster, clock, policy=policy, until="Running", rounds=1)
    status, _ = run(rotor, cluster, clock, policy=policy, stored=stored, paused="bob",
                    until="Paused")
    assert status["message"].startswith("paused by bob: no new batch starts until "
                                        "`pincompile rotate c1 --resume`; 2 node(s) left")
    assert cluster.deleted == ["node-0", "node-1"]
    done, _ = run(rotor, cluster, clock, policy=policy, stored=status)
    assert cluster.deleted == ["node-0", "node-1", "node-2", "node-3"]
    assert done["phase"] == "Complete"


def test_batches_pause_between_them(monkeypatch: pytest.MonkeyPatch, recorded: Recorded,
                                    clock: Clock) -> None:
    cluster = FakeCluster(2, {"web": 2}, clock=clock).install(monkeypatch)
    status, _ = run(rotator(recorded, clock), cluster, clock,
                    request=Request("r1", "ada", pause="1m"), until="Waiting")
    assert status["message"].startswith("pausing ") and status["pauseSeconds"] == 60
    assert [n["state"] for n in status["nodes"]] == ["Replaced", "Pending"]


def test_a_replacement_that_never_comes_is_waited_for_and_reported_late(
        monkeypatch: pytest.MonkeyPatch, recorded: Recorded, clock: Clock) -> None:
    cluster = FakeCluster(3, {"web": 3}, clock=clock).install(monkeypatch)
    cluster.replace = False
    rotor = rotator(recorded, clock)
    policy = RotationPolicy(step_timeout="1m")
    stored: Any = None
    for _ in range(30):
        stored = rotor.tick(cluster.member, policy, Request("r1", "ada"), None, stored) \
            or stored
        cluster.settle()
        clock.now += 5
    assert stored["message"] == "waiting for a Ready replacement of node-0 (pool general)"
    late = [m.split(":")[0] for r, m in recorded.clusters if r == "RotationStepLate"]
    assert late == ["for 60s (stepTimeout 1m)", "for 120s (stepTimeout 1m)"]
    assert cluster.deleted == ["node-0"]
