"""The console's line about a member cluster's nodes."""

from __future__ import annotations

from reconciler.remediation.summary import care_summary


def test_the_line_says_the_circuit_the_unhealthy_and_a_rotation_under_way() -> None:
    assert care_summary(None) == ""
    assert care_summary({"remediation": {"circuit": "Closed", "unhealthy": 0}}) == ""
    assert care_summary({"remediation": {"circuit": "Closed", "unhealthy": 1, "nodes": 5}}) \
        == "1 of 5 nodes unhealthy"
    rotating = {"phase": "Waiting", "message": "waiting for a Ready replacement of n2",
                "nodes": [{"state": "Replaced"}, {"state": "Removed"}, {"state": "Pending"}]}
    assert care_summary({"remediation": {"circuit": "Open", "reason": "3 of 5 unhealthy"},
                         "rotation": rotating}) == (
        "circuit open: 3 of 5 unhealthy; rotating: 1 of 3 replaced (Waiting: waiting for a "
        "Ready replacement of n2)")
    assert care_summary({"rotation": {**rotating, "phase": "Complete"}}) == ""
