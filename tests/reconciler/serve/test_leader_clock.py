"""Lease election on the candidates' own clocks (fake ones, advanced by the tests) against
an in-memory Lease API that, like the API server, refuses a write over a newer
resourceVersion."""

from __future__ import annotations

import copy
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from reconciler.serve.leader import Elector, LeaseTiming
from tests.support.clock import FakeClock

TIMING = LeaseTiming(duration=15, renew_deadline=10, retry=2)


class Leases:
    """``CoordinationV1Api``'s Lease calls, in memory; ``down`` makes every call fail as
    an unreachable API server does."""

    def __init__(self) -> None:
        self.stored: dict[str, Any] = {}
        self.version = 0
        self.down = False

    def _check(self) -> None:
        if self.down:
            raise ConnectionRefusedError("the API server does not answer")

    def _keep(self, lease: Any) -> None:
        self.version += 1
        kept = copy.deepcopy(lease)
        kept.metadata.resource_version = str(self.version)
        self.stored[kept.metadata.name] = kept

    def read_namespaced_lease(self, name: str, namespace: str) -> Any:
        self._check()
        if name not in self.stored:
            raise ApiException(status=404)
        return copy.deepcopy(self.stored[name])

    def create_namespaced_lease(self, namespace: str, body: Any) -> None:
        self._check()
        if body.metadata.name in self.stored:
            raise ApiException(status=409)
        self._keep(body)

    def replace_namespaced_lease(self, name: str, namespace: str, body: Any) -> None:
        self._check()
        if body.metadata.resource_version != self.stored[name].metadata.resource_version:
            raise ApiException(status=409)
        self._keep(body)

    def holder(self, name: str = "serve") -> str:
        return str(self.stored[name].spec.holder_identity or "")


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
    assert api.stored["serve"].spec.lease_transitions == 1


def test_a_leader_that_cannot_renew_stops_leading_after_its_renew_deadline() -> None:
    api, clock = Leases(), FakeClock()
    leader = candidate("a", clock)
    assert leader.tick(api, 0.0)
    api.down = True
    clock.advance(TIMING.renew_deadline)
    assert leader.tick(api, 0.0), "still within the renew deadline"
    clock.advance(0.5)
    assert not leader.tick(api, 0.0) and not leader.reachable


def test_a_candidate_that_leads_other_shards_waits_longer() -> None:
    api, clock = Leases(), FakeClock()
    api.create_namespaced_lease("ns", client.V1Lease(
        metadata=client.V1ObjectMeta(name="serve"),
        spec=client.V1LeaseSpec(holder_identity="gone", lease_duration_seconds=15)))
    busy = candidate("busy", clock)
    assert not busy.tick(api, extra_wait=TIMING.duration)  # leads one shard already
    clock.advance(TIMING.duration)
    assert not busy.tick(api, extra_wait=TIMING.duration)
    clock.advance(TIMING.duration)
    assert busy.tick(api, extra_wait=TIMING.duration) and api.holder() == "busy"
