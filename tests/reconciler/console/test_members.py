"""What the overview says of a member cluster from its node watch and its Cluster
resource: nodes Ready, the nodes carrying a remediation signal, its rotation (the watches
themselves run against the fleet in test_browser_e2e.py)."""

from __future__ import annotations

from typing import Any

from pincompile.contract import RemediationPolicy
from reconciler.console.members import SIGNALLED_SHOWN, MemberHealth, rotation_of, seen
from reconciler.remediation.nodes import REMEDIATION_ANNOTATION, ZONE_LABEL, Mark
from reconciler.remediation.summary import Signal, SignalledNode
from reconciler.rotation import plan

KNOWN = MemberHealth("east", None, failover="Returning", failover_reason="answers again")


def node(ready: str) -> dict[str, Any]:
    return {"status": {"conditions": [{"type": "MemoryPressure", "status": "False"},
                                      {"type": "Ready", "status": ready}]}}


def test_a_listed_member_counts_its_ready_nodes_and_keeps_its_failover_state() -> None:
    health = seen(KNOWN, None, True, [node("True"), node("False"), node("Unknown")])
    assert (health.state, health.nodes_ready, health.nodes, health.failover) == \
        ("reachable", 1, 3, "Returning")


def test_a_member_not_listed_yet_is_checking_and_one_that_failed_is_unreachable() -> None:
    assert seen(KNOWN, None, False, []).state == "checking"
    down = seen(KNOWN, "connection refused", False, [])
    assert (down.state, down.problem) == ("unreachable", "connection refused")
    stale = seen(KNOWN, "watch broke", True, [node("True")])
    assert (stale.state, stale.nodes) == ("unreachable", 1)  # the last count, marked


def test_a_member_that_forbids_listing_nodes_answered_so_it_is_reachable() -> None:
    refused = seen(KNOWN, 'nodes is forbidden: User "serve" cannot list resource "nodes"',
                   False, [])
    assert (refused.state, refused.nodes_readable) == ("reachable", False)
    assert refused.problem.startswith("nodes not readable: nodes is forbidden")


POLICY = RemediationPolicy.model_validate({"signals": [
    {"condition": "Ready", "after": "5m"},
    {"condition": "KernelDeadlock", "action": "terminate"},
    {"annotation": "pincompute.io/disk-failing", "action": "cordon"}]})


def signalled(name: str, *, zone: str = "a", ready: str = "True", kernel: str = "False",
              annotations: dict[str, str] | None = None,
              cordoned: bool = False) -> dict[str, Any]:
    """A Node whose conditions changed at 10:00 (its zone label, annotations, cordon)."""
    at = "2026-11-01T10:00:00Z"
    return {"metadata": {"name": name, "labels": {ZONE_LABEL: zone},
                         "annotations": annotations or {}},
            "spec": {"unschedulable": cordoned},
            "status": {"conditions": [
                {"type": "Ready", "status": ready, "lastTransitionTime": at},
                {"type": "KernelDeadlock", "status": kernel, "lastTransitionTime": at}]}}


def test_a_member_lists_the_nodes_carrying_a_signal_with_since_when_and_their_cordon() -> None:
    mark = Mark("drain", "draining", 1_790_000_000.0, "Ready=False|Unknown").to_json()
    nodes = [signalled("n3", ready="Unknown", kernel="True", cordoned=True,
                       annotations={REMEDIATION_ANNOTATION: mark}),
             signalled("n1"),
             signalled("n2", zone="b", annotations={"pincompute.io/disk-failing": "smart"})]
    health = seen(KNOWN, None, True, nodes, POLICY)
    assert (health.nodes_ready, health.signalled_total) == (2, 2)
    assert health.signalled == (
        SignalledNode("n2", "b", (Signal("pincompute.io/disk-failing", ""),), False),
        SignalledNode("n3", "a", (Signal("Ready=False|Unknown", "2026-11-01T10:00:00Z"),
                                  Signal("KernelDeadlock=True", "2026-11-01T10:00:00Z")),
                      True, "drain: draining"))
    assert seen(KNOWN, None, True, nodes).signalled == ()  # no policy: no signal


def test_a_member_keeps_the_first_nodes_with_a_signal_by_name_and_counts_them_all() -> None:
    nodes = [signalled(f"n{i:02}", ready="False") for i in range(SIGNALLED_SHOWN + 7)]
    health = seen(KNOWN, None, True, nodes[::-1], POLICY)
    assert [n.name for n in health.signalled] == [f"n{i:02}" for i in range(SIGNALLED_SHOWN)]
    assert health.signalled_total == SIGNALLED_SHOWN + 7


def test_a_members_rotation_says_whether_one_runs_who_paused_it_and_the_policys_batch() -> None:
    cr: dict[str, Any] = {"metadata": {"name": "east", "annotations": {}},
                          "spec": {"rotation": {"batch": 2, "pause": "2m"}}, "status": {}}
    idle = rotation_of(cr, KNOWN)
    assert (idle.rotation_busy, idle.rotation_batch, idle.rotation_pause) == ("", "2", "2m")
    cr["metadata"]["annotations"] = {plan.REQUEST_ANNOTATION: plan.Request("r1", "ops")
                                     .to_json(), plan.PAUSED_BY_ANNOTATION: "ops"}
    cr["status"]["rotation"] = {"id": "r1", "phase": "Paused",
                                "nodes": [{"name": "n1", "state": "Replaced"},
                                          {"name": "n2", "state": "Pending"}]}
    paused = rotation_of(cr, KNOWN)
    assert paused.rotation_busy == "rotation r1 is Paused: 1 of 2 node(s) left"
    assert paused.rotation_paused_by == "ops"
    cr["metadata"]["annotations"] = {plan.REQUEST_ANNOTATION: "{not json"}
    cr["spec"]["rotation"] = {"batch": 0}
    odd = rotation_of(cr, KNOWN)
    assert odd.rotation_busy.startswith(f"{plan.REQUEST_ANNOTATION} is not a rotation request")
    assert (odd.rotation_batch, odd.rotation_pause) == ("", "")  # a form left empty: the policy's
