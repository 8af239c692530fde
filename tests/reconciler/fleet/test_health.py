"""How a cluster's node health reads."""

from __future__ import annotations


def test_node_health_summary() -> None:
    from reconciler.fleet.health import NodeHealth

    ok = NodeHealth(cluster="a", total=3, ready=3, oldest_lease_age=4.2)
    assert ok.healthy and ok.summary() == "nodes 3/3 Ready, oldest lease renewal 4s ago"
    bad = NodeHealth(cluster="a", total=3, ready=2, not_ready=["a-general-1"],
                     oldest_lease_age=61)
    assert not bad.healthy and "NOT Ready: a-general-1" in bad.summary()
    assert bad.to_json()["oldestLeaseRenewalSeconds"] == 61
    gone = NodeHealth(cluster="a", reachable=False, error="unreachable")
    assert not gone.healthy and gone.summary() == "nodes unknown (unreachable)"
