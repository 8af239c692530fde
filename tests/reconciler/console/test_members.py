"""What the overview says of a member cluster from its node watch (the watches
themselves run against the fleet in test_browser_e2e.py)."""

from __future__ import annotations

from typing import Any

from reconciler.console.members import MemberHealth, seen

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
