"""Lease election on the candidates' own clocks (fake ones, advanced by the tests) against
an in-memory host cluster that, like the API server, refuses a write over a newer
resourceVersion (the contract suite holds it to a real one)."""

from __future__ import annotations

from reconciler.model import Obj
from reconciler.serve.leader import Elector, LeaseTiming, lease_ref
from tests.support.clock import FakeClock
from tests.support.kube_fake import FakeAccess, FakeCluster

TIMING = LeaseTiming(duration=15, renew_deadline=10, retry=2)


class Leases(FakeAccess):
    """The host cluster in memory (:mod:`tests.support.kube_fake`), with namespace ``ns``;
    ``cluster.down`` makes every call fail as an unreachable API server does."""

    def __init__(self) -> None:
        super().__init__("host", FakeCluster("host"))
        self.cluster.create({"apiVersion": "v1", "kind": "Namespace",
                             "metadata": {"name": "ns"}})

    def lease(self, name: str = "serve") -> Obj:
        found = self.cluster.get(lease_ref(name, "ns"))
        assert found is not None, f"no Lease {name}"
        return found

    def holder(self, name: str = "serve") -> str:
        return str(self.lease(name)["spec"].get("holderIdentity") or "")


def candidate(identity: str, clock: FakeClock) -> Elector:
    return Elector("serve", "ns", identity, TIMING, clock=clock)


def test_a_standby_takes_over_only_after_a_lease_duration_without_renewals() -> None:
    api, clock = Leases(), FakeClock()
    leader, standby = candidate("a", clock), candidate("b", clock)
    assert leader.tick(api, 0.0) and not standby.tick(api, 0.0)
    for _ in range(20):  # the leader renews every retry: the standby never takes over
        clock.advance(TIMING.retry)
        assert leader.tick(api, 0.0) and not standby.tick(api, 0.0)
    # the leader stops renewing (it died): a lease duration of the standby's own clock
    clock.advance(TIMING.duration - 0.5)
    assert not standby.tick(api, 0.0) and api.holder() == "a"
    clock.advance(0.5)
    assert standby.tick(api, 0.0) and api.holder() == "b"
    assert api.lease()["spec"]["leaseTransitions"] == 1


def test_a_leader_that_cannot_renew_stops_leading_after_its_renew_deadline() -> None:
    api, clock = Leases(), FakeClock()
    leader = candidate("a", clock)
    assert leader.tick(api, 0.0)
    api.cluster.down = "the API server does not answer"
    clock.advance(TIMING.renew_deadline)
    assert leader.tick(api, 0.0), "still within the renew deadline"
    clock.advance(0.5)
    assert not leader.tick(api, 0.0) and not leader.reachable


def test_a_candidate_that_leads_other_shards_waits_longer() -> None:
    api, clock = Leases(), FakeClock()
    api.create({**lease_ref("serve", "ns"),
                "spec": {"holderIdentity": "gone", "leaseDurationSeconds": 15}})
    busy = candidate("busy", clock)
    assert not busy.tick(api, extra_wait=TIMING.duration)  # leads one shard already
    clock.advance(TIMING.duration)
    assert not busy.tick(api, extra_wait=TIMING.duration)
    clock.advance(TIMING.duration)
    assert busy.tick(api, extra_wait=TIMING.duration) and api.holder() == "busy"
