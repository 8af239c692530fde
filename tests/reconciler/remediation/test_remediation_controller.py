"""Remediation's ticks in a member cluster held in memory (tests/support/fake_nodes.py):
what it does, what it records once, and what it keeps for the next leader."""

from __future__ import annotations

from typing import Any

import pytest

from pincompile.contract import RemediationPolicy
from reconciler.remediation.controller import Remediator
from reconciler.remediation.metrics import NodeMetrics
from reconciler.remediation.nodes import REMEDIATION_ANNOTATION
from tests.support.fake_nodes import Clock, FakeCluster, Recorded


def policy(**extra: Any) -> RemediationPolicy:
    return RemediationPolicy.model_validate({
        "signals": [{"condition": "KernelDeadlock", "after": "1m", "action": "drain"},
                    {"condition": "ReadonlyFilesystem", "after": "1m",
                     "action": "terminate"}],
        "limits": {"maxActionsPerHour": 5, "maxUnhealthy": "40%"}, **extra})


@pytest.fixture
def recorded() -> Recorded:
    return Recorded()


@pytest.fixture
def clock() -> Clock:
    return Clock(120)


@pytest.fixture
def metrics() -> NodeMetrics:
    return NodeMetrics()


@pytest.fixture
def remediator(recorded: Recorded, metrics: NodeMetrics, clock: Clock) -> Remediator:
    return Remediator(recorded, metrics, clock)  # type: ignore[arg-type]


def ticks(remediator: Remediator, cluster: FakeCluster, rounds: int,
          rule: RemediationPolicy | None = None, stored: Any = None) -> list[int]:
    """``rounds`` ticks, the cluster settling after each; web's Ready pods after each."""
    ready = []
    for _ in range(rounds):
        stored = remediator.tick(cluster.member, rule or policy(), stored) or stored
        ready.append(cluster.ready("web"))
        cluster.settle()
        ready.append(cluster.ready("web"))
    return ready


def test_a_sick_node_is_drained_one_pod_at_a_time_with_one_event_per_action(
        monkeypatch: pytest.MonkeyPatch, remediator: Remediator, recorded: Recorded,
        metrics: NodeMetrics) -> None:
    cluster = FakeCluster(5, {"web": 3}, crowd=True).install(monkeypatch)
    cluster.condition("node-0", "KernelDeadlock", "True")
    ready = ticks(remediator, cluster, 6)
    assert min(ready) == 2, "the budget (maxUnavailable 1) was broken"
    assert cluster.on("node-0") == [] and cluster.ready("web") == 3
    assert recorded.reasons("node-0") == ["RemediationDrain", "NodeDrained"]
    assert recorded.nodes[0][2] == ("cordon and drain: KernelDeadlock=True for 2m00s "
                                    "(after 1m)")
    assert [m[2] for m in recorded.moves] == ["remediation (KernelDeadlock=True)"] * 3
    node = cluster.nodes["node-0"]
    assert node["spec"]["unschedulable"] is True
    assert '"phase": "drained"' in node["metadata"]["annotations"][REMEDIATION_ANNOTATION]
    sample = metrics.actions.labels("c1", "drain", "enforce")._value.get()
    assert sample == 1

    cluster.condition("node-0", "KernelDeadlock", "False")
    ticks(remediator, cluster, 2)
    assert recorded.reasons("node-0")[-1] == "NodeUncordoned"
    assert not node["spec"]["unschedulable"]
    assert REMEDIATION_ANNOTATION not in node["metadata"]["annotations"]


def test_terminate_drains_then_deletes_the_node_once(monkeypatch: pytest.MonkeyPatch,
                                                     remediator: Remediator,
                                                     recorded: Recorded) -> None:
    cluster = FakeCluster(5, {"web": 3}).install(monkeypatch)
    cluster.replace = False
    cluster.condition("node-1", "ReadonlyFilesystem", "True")
    ticks(remediator, cluster, 4)
    assert cluster.deleted == ["node-1"]
    assert recorded.reasons("node-1") == ["RemediationTerminate", "NodeTerminated"]
    assert cluster.ready("web") == 3


def test_dry_run_says_what_it_would_do_once_and_does_nothing(
        monkeypatch: pytest.MonkeyPatch, remediator: Remediator, recorded: Recorded,
        metrics: NodeMetrics) -> None:
    cluster = FakeCluster(5, {"web": 3}).install(monkeypatch)
    cluster.condition("node-0", "KernelDeadlock", "True")
    status = None
    for _ in range(3):
        status = remediator.tick(cluster.member, policy(mode="dry-run"), status)
    assert recorded.nodes == [("node-0", "RemediationDryRun", "dry-run: would cordon and "
                               "drain the node: KernelDeadlock=True for 2m00s (after 1m)")]
    assert cluster.evictions == 0 and not cluster.nodes["node-0"]["spec"]
    assert metrics.actions.labels("c1", "drain", "dry-run")._value.get() == 1
    assert status is not None and status["mode"] == "dry-run" and status["actions"] == []


def test_the_circuit_opens_once_and_closes_once(monkeypatch: pytest.MonkeyPatch,
                                                remediator: Remediator, recorded: Recorded,
                                                metrics: NodeMetrics, clock: Clock) -> None:
    cluster = FakeCluster(5, {"web": 3}).install(monkeypatch)
    for name in ("node-0", "node-1", "node-2"):
        cluster.condition(name, "KernelDeadlock", "True")
    status = None
    for _ in range(3):
        status = remediator.tick(cluster.member, policy(), status)
    assert [r for r, _ in recorded.clusters] == ["RemediationCircuitOpen"]
    assert recorded.clusters[0][1].startswith("3 of 5 nodes of the cluster are unhealthy")
    assert cluster.evictions == 0 and all(not n["spec"] for n in cluster.nodes.values())
    gauge = metrics.circuit.labels("c1", "cluster")
    assert gauge._value.get() == 1
    assert status is not None and status["circuit"] == "Open" and status["unhealthy"] == 3
    assert set(recorded.reasons()) == {"RemediationWaiting"}

    for name in ("node-0", "node-1", "node-2"):
        cluster.condition(name, "KernelDeadlock", "False")
    clock.now += 5
    status = remediator.tick(cluster.member, policy(), status)
    assert [r for r, _ in recorded.clusters] == ["RemediationCircuitOpen",
                                                 "RemediationCircuitClosed"]
    assert gauge._value.get() == 0 and status is not None and status["circuit"] == "Closed"


def test_a_new_leader_keeps_to_the_hourly_limit_from_the_host(
        monkeypatch: pytest.MonkeyPatch, recorded: Recorded, metrics: NodeMetrics,
        clock: Clock) -> None:
    cluster = FakeCluster(5, {"web": 3}).install(monkeypatch)
    first = Remediator(recorded, metrics, clock)  # type: ignore[arg-type]
    cluster.condition("node-0", "KernelDeadlock", "True")
    stored = first.tick(cluster.member, policy(limits={"maxActionsPerHour": 1}), None)
    assert stored is not None and [a["node"] for a in stored["actions"]] == ["node-0"]
    cluster.condition("node-3", "KernelDeadlock", "True")
    cluster.settle()
    later = Remediator(recorded, metrics, clock)  # type: ignore[arg-type]
    later.tick(cluster.member, policy(limits={"maxActionsPerHour": 1}), stored)
    assert "node-3" not in [n for n, r, _ in recorded.nodes if r.startswith("Remediation")
                            and r != "RemediationWaiting"]
    assert any("maxActionsPerHour is 1" in m for n, r, m in recorded.nodes if n == "node-3")
