"""Leader election with coordination.k8s.io/v1 Leases in the host cluster.

The algorithm is client-go's: a candidate reads the Lease; if another holder's record has
not changed for ``duration`` seconds *of the candidate's own clock* (no trust in other
machines' clocks) the candidate writes itself in, guarded by the resourceVersion so two
candidates can never both win; the holder renews every ``retry`` seconds and stops leading
when it could not renew for ``renew_deadline`` seconds; releasing writes an empty holder
so a standby takes over at once.

With several shards (one Lease each) a candidate that already leads ``k`` shards waits
``k`` extra lease durations before taking another, so an idle replica gets it first and the
shards spread over the replicas; a lone replica still ends up leading them all.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("pincompile.serve.leader")


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@dataclass
class LeaseTiming:
    """Seconds: how long a Lease is valid, how long the holder tries to renew, how often."""

    duration: float = 15.0
    renew_deadline: float = 10.0
    retry: float = 2.0

    def check(self) -> None:
        if not self.duration > self.renew_deadline > self.retry > 0:
            raise ValueError("lease timing must satisfy duration > renew deadline > retry > 0 "
                             f"(got {self.duration}, {self.renew_deadline}, {self.retry})")


@dataclass
class Elector:
    """One Lease: tracks what this candidate last saw of it and whether it holds it."""

    name: str
    namespace: str
    identity: str
    timing: LeaseTiming
    leading: bool = False
    _seen: tuple[Any, ...] | None = None
    _seen_at: float = 0.0
    _renewed_at: float = 0.0
    _transitions: int = field(default=0)

    def tick(self, api: Any, extra_wait: float) -> bool:
        """Try to acquire or renew once; return whether this candidate leads afterwards."""
        from kubernetes.client.exceptions import ApiException

        now = time.monotonic()
        try:
            acquired = self._try(api, now, extra_wait)
        except (ApiException, OSError, ValueError) as exc:
            status = getattr(exc, "status", None)
            log.debug("lease %s/%s: %s", self.namespace, self.name, status or exc)
            acquired = False
        if acquired:
            self._renewed_at = now
            self.leading = True
        elif self.leading and now - self._renewed_at > self.timing.renew_deadline:
            log.warning("lease %s/%s: could not renew for %.0fs; no longer leading",
                        self.namespace, self.name, now - self._renewed_at)
            self.leading = False
        return self.leading

    def _try(self, api: Any, now: float, extra_wait: float) -> bool:
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        try:
            lease = api.read_namespaced_lease(self.name, self.namespace)
        except ApiException as exc:
            if exc.status != 404:
                raise
            body = client.V1Lease(metadata=client.V1ObjectMeta(name=self.name),
                                  spec=self._spec(None))
            api.create_namespaced_lease(self.namespace, body)  # 409 if another was faster
            return True
        spec = lease.spec or client.V1LeaseSpec()
        record = (spec.holder_identity, spec.lease_duration_seconds, spec.renew_time,
                  spec.lease_transitions)
        if record != self._seen:
            self._seen, self._seen_at = record, now
        holder = spec.holder_identity or ""
        if holder != self.identity:
            duration = spec.lease_duration_seconds or self.timing.duration
            free_after = self._seen_at + extra_wait + (duration if holder else 0.0)
            if now < free_after:
                self.leading = False
                return False
        lease.spec = self._spec(spec)
        api.replace_namespaced_lease(self.name, self.namespace, lease)  # 409 if it changed
        return True

    def _spec(self, old: Any) -> Any:
        from kubernetes import client

        now = _now()
        mine = old is not None and old.holder_identity == self.identity
        transitions = (old.lease_transitions or 0) if old is not None else 0
        return client.V1LeaseSpec(
            holder_identity=self.identity,
            lease_duration_seconds=int(self.timing.duration),
            acquire_time=old.acquire_time if mine else now,
            renew_time=now,
            lease_transitions=transitions if mine or old is None else transitions + 1)

    def release(self, api: Any) -> bool:
        """Give the Lease up (only if this candidate still holds it); whether it did."""
        from kubernetes.client.exceptions import ApiException

        was_leading, self.leading = self.leading, False
        if not was_leading:
            return False
        try:
            lease = api.read_namespaced_lease(self.name, self.namespace)
            if lease.spec is None or lease.spec.holder_identity != self.identity:
                return False
            lease.spec.holder_identity = ""
            lease.spec.lease_duration_seconds = 1
            lease.spec.renew_time = _now()
            api.replace_namespaced_lease(self.name, self.namespace, lease)
            return True
        except (ApiException, OSError) as exc:
            log.warning("lease %s/%s: release failed: %s", self.namespace, self.name, exc)
            return False


def lease_name(base: str, shard: int, shards: int) -> str:
    """``base`` for one shard, ``base-<i>-of-<n>`` for several."""
    return base if shards == 1 else f"{base}-{shard}-of-{shards}"


class Campaign:
    """Runs the electors of every shard in one thread and reports which shards it leads."""

    def __init__(self, api: Any, electors: Sequence[Elector], timing: LeaseTiming,
                 on_change: Callable[[frozenset[int]], None] = lambda _held: None) -> None:
        timing.check()
        self.api = api
        self.electors = list(electors)
        self.timing = timing
        self.on_change = on_change
        self._held: frozenset[int] = frozenset()
        self._lock = threading.Lock()
        self.ticked = threading.Event()
        """Set after the first round of ticks (the host cluster answered or not)."""

    @property
    def held(self) -> frozenset[int]:
        with self._lock:
            return self._held

    def tick(self) -> frozenset[int]:
        """One round over every shard's Lease."""
        for shard, elector in enumerate(self.electors):
            others = sum(1 for i, e in enumerate(self.electors) if e.leading and i != shard)
            elector.tick(self.api, 0.0 if elector.leading else others * self.timing.duration)
        held = frozenset(i for i, e in enumerate(self.electors) if e.leading)
        with self._lock:
            changed, self._held = held != self._held, held
        self.ticked.set()
        if changed:
            self.on_change(held)
        return held

    def run(self, stop: threading.Event) -> None:
        """Tick every ``retry`` seconds until ``stop`` is set."""
        while not stop.is_set():
            started = time.monotonic()
            self.tick()
            stop.wait(max(0.0, self.timing.retry - (time.monotonic() - started)))

    def release(self) -> list[str]:
        """Release every held Lease; the names of those released."""
        released = [e.name for e in self.electors if e.release(self.api)]
        with self._lock:
            self._held = frozenset()
        return released
