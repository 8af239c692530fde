"""Lease timing rules and behaviour when the host cluster cannot be reached."""

from __future__ import annotations

import socket

import pytest

from reconciler.clients.connect import Connection, RetryPolicy
from reconciler.serve.leader import Campaign, Elector, LeaseTiming, Roster, lease_name


def test_lease_timing_must_leave_room_to_renew() -> None:
    LeaseTiming(15, 10, 2).check()
    for bad in ((10, 10, 2), (15, 2, 2), (15, 10, 0)):
        with pytest.raises(ValueError, match="duration > renew deadline > retry"):
            LeaseTiming(*bad).check()


def test_lease_and_member_names_are_valid_kubernetes_names() -> None:
    assert lease_name("pincompile-serve", 0, 1) == "pincompile-serve"
    assert lease_name("pincompile-serve", 1, 3) == "pincompile-serve-1-of-3"
    timing = LeaseTiming()
    a = Roster("pincompile-serve", "ns", "Pod_A.example/1", timing).name
    b = Roster("pincompile-serve", "ns", "pod-a-example-1", timing).name
    assert a != b, "identities that differ only in spelling share a member Lease"
    assert len(a) <= 63 and a.replace("-", "").isalnum() and a == a.lower()


def test_an_unreachable_host_cluster_leads_nothing_and_is_not_ready() -> None:
    from kubernetes import client

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = client.Configuration()
    config.host = f"http://127.0.0.1:{port}"
    api = Connection("host", "host", None, configuration=config,
                     retry=RetryPolicy(attempts=1))
    timing = LeaseTiming(3, 2, 1)
    changes: list[frozenset[int]] = []
    campaign = Campaign(api, [Elector("l", "ns", "me", timing)], timing,
                        on_change=changes.append)
    assert campaign.tick() == frozenset()
    assert not campaign.ticked.is_set() and changes == []
    assert campaign.relay("a" * 40) == []
    assert campaign.release() == []
