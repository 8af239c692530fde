"""What remediation decides: a pure function of the nodes, the policy, the actions of the
last hour and the clock."""

from __future__ import annotations

from typing import Any

from pincompile.contract import RemediationPolicy
from reconciler.remediation.decide import ActionRecord, allowed_unhealthy, decide
from reconciler.remediation.nodes import (
    REMEDIATION_ANNOTATION,
    ROTATION_ANNOTATION,
    Mark,
    NodeView,
)

NOW = 1_800_000_000.0


def policy(**limits: Any) -> RemediationPolicy:
    return RemediationPolicy.model_validate({
        "signals": [{"condition": "Ready", "after": "5m", "action": "drain"},
                    {"condition": "KernelDeadlock", "after": "1m", "action": "terminate"},
                    {"condition": "DiskSlow", "after": "1m", "action": "cordon"},
                    {"annotation": "pincompute.io/sick", "after": "30s", "action": "cordon"}],
        "limits": {"maxActionsPerHour": 10, "maxUnhealthy": "50%", **limits}})


def node(name: str, zone: str = "a", *, ready: str = "True", since: float = NOW - 3600,
         mark: Mark | None = None, unschedulable: bool = False,
         **conditions: tuple[str, float]) -> NodeView:
    annotations = {REMEDIATION_ANNOTATION: mark.to_json()} if mark else {}
    return NodeView(name, zone=zone, unschedulable=unschedulable or mark is not None,
                    conditions={"Ready": (ready, since), **conditions},
                    annotations=annotations)


def healthy(count: int, zone: str = "a") -> list[NodeView]:
    return [node(f"ok-{zone}-{i}", zone) for i in range(count)]


def test_a_signal_acts_once_it_held_for_its_after_and_not_before() -> None:
    nodes = [node("n1", ready="False", since=NOW - 300), node("n2", ready="Unknown",
                                                              since=NOW - 299), *healthy(4)]
    decision = decide(nodes, policy(), [], NOW)
    assert [(s.node, s.action, s.signal) for s in decision.starts] == [
        ("n1", "drain", "Ready=False|Unknown")]
    assert decision.starts[0].reason == "Ready=False|Unknown for 5m00s (after 5m)"
    assert decision.unhealthy == {"n1": ["Ready=False|Unknown"], "n2": ["Ready=False|Unknown"]}


def test_the_strongest_held_signal_wins_and_takes_a_cordoned_node_further() -> None:
    cordoned = Mark("cordon", "cordoned", NOW - 100, "DiskSlow=True")
    nodes = [node("n1", ready="False", since=NOW - 600, mark=cordoned,
                  DiskSlow=("True", NOW - 600), KernelDeadlock=("True", NOW - 60)),
             *healthy(5)]
    [start] = decide(nodes, policy(), [], NOW).starts
    assert (start.action, start.signal, start.escalates) == (
        "terminate", "KernelDeadlock=True", "cordon")


def test_one_drain_at_a_time_per_zone_the_second_waits_other_zones_go_on() -> None:
    nodes = [node("a1", "a", ready="False", since=NOW - 900),
             node("a2", "a", ready="False", since=NOW - 800),
             node("b1", "b", ready="False", since=NOW - 700), *healthy(3, "a"), *healthy(3, "b")]
    decision = decide(nodes, policy(), [], NOW)
    assert [s.node for s in decision.starts] == ["a1", "b1"]
    [wait] = decision.waits
    assert wait.node == "a2" and wait.reason.endswith(
        "node a1 in zone a is being drained (at most 1 drain(s) at a time per zone)")


def test_a_drain_under_way_holds_the_zone_but_not_a_cordon() -> None:
    draining = Mark("drain", "draining", NOW - 60, "Ready=False|Unknown")
    nodes = [node("a1", ready="False", since=NOW - 900, mark=draining),
             node("a2", ready="False", since=NOW - 600),
             node("a3", DiskSlow=("True", NOW - 120)), *healthy(5)]
    decision = decide(nodes, policy(), [], NOW)
    assert [(s.node, s.action) for s in decision.starts] == [("a3", "cordon")]
    assert [w.node for w in decision.waits] == ["a2"]
    assert decide(nodes, policy(maxDrainsPerZone=2), [], NOW).starts[0].node == "a2"


def test_the_hourly_limit_counts_the_last_hour_only_and_says_when_it_frees_up() -> None:
    recent = [ActionRecord("x", "drain", NOW - 3599), ActionRecord("y", "drain", NOW - 1000),
              ActionRecord("z", "drain", NOW - 3601)]
    nodes = [node("n1", ready="False", since=NOW - 900), *healthy(5)]
    decision = decide(nodes, policy(maxActionsPerHour=2), recent, NOW)
    assert decision.starts == []
    assert decision.waits[0].reason.endswith(
        "2 actions in the last hour, maxActionsPerHour is 2; the next is possible at "
        "2027-01-15T08:00:01Z")
    assert [s.node for s in decide(nodes, policy(maxActionsPerHour=3), recent, NOW).starts] \
        == ["n1"]


def test_more_unhealthy_than_max_unhealthy_opens_the_circuit_and_nothing_is_done() -> None:
    draining = Mark("drain", "draining", NOW - 60, "Ready=False|Unknown")
    sick = [node(f"s{i}", ready="False", since=NOW - 900) for i in range(3)]
    nodes = [*sick, node("d", ready="False", since=NOW - 900, mark=draining), *healthy(3)]
    decision = decide(nodes, policy(), [], NOW)  # 4 of 7 unhealthy: more than 3 (50%)
    assert decision.starts == []
    assert decision.frozen == {n.name for n in nodes}
    [cluster] = decision.circuits  # one zone: no circuit of its own
    assert (cluster.open, cluster.unhealthy, cluster.nodes, cluster.limit) == (True, 4, 7, 3)
    assert all("more than maxUnhealthy allows (3)" in w.reason for w in decision.waits)
    assert [w.node for w in decision.waits] == ["s0", "s1", "s2"]
    calmer = [*sick[:2], *healthy(4)]  # 2 of 6: not more than 3
    assert not any(c.open for c in decide(calmer, policy(), [], NOW).circuits)


def test_a_zone_circuit_holds_only_its_zone() -> None:
    nodes = [node("a1", "a", ready="False", since=NOW - 900),
             node("a2", "a", ready="False", since=NOW - 900),
             node("b1", "b", ready="False", since=NOW - 900), *healthy(3, "b")]
    decision = decide(nodes, policy(), [], NOW)  # cluster 3 of 6; zone a 2 of 2
    assert [c.scope for c in decision.open] == ["zone a"]
    assert [s.node for s in decision.starts] == ["b1"]
    assert decision.frozen == {"a1", "a2"}


def test_a_recovered_node_is_released_and_uncordoned_if_remediation_cordoned_it() -> None:
    drained = Mark("drain", "drained", NOW - 900, "Ready=False|Unknown")
    before = Mark("cordon", "cordoned", NOW - 900, "DiskSlow=True", was_unschedulable=True)
    terminating = Mark("terminate", "draining", NOW - 900, "KernelDeadlock=True")
    nodes = [node("n1", mark=drained), node("n2", mark=before), node("n3", mark=terminating),
             *healthy(3)]
    releases = decide(nodes, policy(), [], NOW).releases
    assert [(r.node, r.uncordon) for r in releases] == [("n1", True), ("n2", False)]
    keep = RemediationPolicy.model_validate({**policy().model_dump(by_alias=True),
                                             "uncordon": False})
    assert [r.uncordon for r in decide(nodes, keep, [], NOW).releases] == [False, False]


def test_a_node_without_ready_counts_from_its_creation() -> None:
    fresh = NodeView("new", zone="a", conditions={}, created=NOW - 301)
    assert [s.node for s in decide([fresh, *healthy(3)], policy(), [], NOW).starts] == ["new"]


def test_an_annotation_counts_from_when_it_was_first_seen() -> None:
    sick = NodeView("n1", zone="a", conditions={"Ready": ("True", NOW - 3600)},
                    annotations={"pincompute.io/sick": "disk probe failed"})
    nodes = [sick, *healthy(3)]
    assert decide(nodes, policy(), [], NOW, {("n1", "pincompute.io/sick"): NOW - 29}).starts \
        == []
    [start] = decide(nodes, policy(), [], NOW, {("n1", "pincompute.io/sick"): NOW - 30}).starts
    assert (start.action, start.signal) == ("cordon", "pincompute.io/sick")


def test_a_node_a_rotation_holds_is_left_to_it() -> None:
    rotating = NodeView("n1", zone="a", conditions={"Ready": ("False", NOW - 900)},
                        annotations={ROTATION_ANNOTATION: "r1"}, unschedulable=True)
    decision = decide([rotating, *healthy(3)], policy(), [], NOW)
    assert decision.starts == [] and decision.waits == []
    assert decision.unhealthy == {"n1": ["Ready=False|Unknown"]}
    drained = Mark("drain", "drained", NOW - 900, "Ready=False|Unknown")
    recovered = NodeView("n2", zone="a", conditions={"Ready": ("True", NOW - 60)},
                         annotations={ROTATION_ANNOTATION: "r1",
                                      REMEDIATION_ANNOTATION: drained.to_json()},
                         unschedulable=True)
    assert decide([recovered, *healthy(3)], policy(), [], NOW).releases == []


def test_max_unhealthy_as_a_share_rounds_down() -> None:
    assert [allowed_unhealthy("40%", n) for n in (1, 2, 3, 5, 6, 25)] == [0, 0, 1, 2, 2, 10]
    assert allowed_unhealthy(2, 100) == 2
