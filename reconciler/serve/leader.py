"""Leader election with coordination.k8s.io/v1 Leases in the host cluster.

The algorithm is client-go's: a candidate reads the Lease; if another holder's record has
not changed for ``duration`` seconds *of the candidate's own clock* (no trust in other
machines' clocks) the candidate writes itself in, guarded by the resourceVersion so two
candidates can never both win; the holder renews every ``retry`` seconds and stops leading
when it could not renew for ``renew_deadline`` seconds; releasing writes an empty holder
so a standby takes over at once.

A push webhook may reach any replica (a Service picks one). A replica that does not lead a
shard relays the push by annotating that shard's Lease (:data:`REQUEST_ANNOTATION`); the
leader reads the Lease at every renewal anyway, so the push reaches it within ``retry``
seconds without another watch or request.

With several shards (one Lease each) the replicas spread the shards: each one leads at
most its fair share (a :class:`Roster` of member Leases tells how many replicas there
are), hands a surplus shard back between passes when a replica joins, and a candidate that
already leads ``k`` shards waits ``k`` extra lease durations before taking another, so an
idle replica gets it first; a lone replica still ends up leading them all.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reconciler.clock import SYSTEM_CLOCK, Clock
from reconciler.kinds import KindInfo
from reconciler.model import Obj

if TYPE_CHECKING:
    from reconciler.clients.access import ClusterAccess

log = logging.getLogger("pincompile.serve.leader")
#: a replica that received a push but does not lead a shard writes ``<sha> <time>`` here;
#: that shard's leader sees it on its next renewal and runs a pass
REQUEST_ANNOTATION = "pincompute.io/requested-revision"
LEASE = KindInfo("coordination.k8s.io/v1", "Lease")
#: label of the per-replica member Leases (value: the shard Leases' base name)
MEMBER_LABEL = "pincompute.io/serve-members"


def _stamp(clock: Clock) -> str:
    """The clock's instant as the Lease's ``renewTime`` carries it (a MicroTime)."""
    return dt.datetime.fromtimestamp(clock(), dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def lease_ref(name: str, namespace: str) -> Obj:
    """The Lease ``namespace/name``, as the cluster's verbs name an object."""
    return {"apiVersion": LEASE.api_version, "kind": LEASE.kind,
            "metadata": {"name": name, "namespace": namespace}}


def _versioned(lease: Obj, spec: Obj) -> Obj:
    """A merge patch of ``lease``'s spec that only applies at the version it was read at
    (409 when another candidate wrote it since)."""
    return {"metadata": {"resourceVersion": lease["metadata"]["resourceVersion"]},
            "spec": spec}


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
    _request: str | None = field(default=None)
    request: str | None = None
    """A relayed revision this candidate has not acted on yet."""
    reachable: bool = False
    """Whether the last attempt got an answer from the host cluster."""
    clock: Clock = field(default=SYSTEM_CLOCK, kw_only=True)
    """This candidate's own clock: how long a record went unchanged, how long since it
    last renewed."""

    def tick(self, api: ClusterAccess, extra_wait: float) -> bool:
        """Try to acquire or renew once; return whether this candidate leads afterwards."""
        now = self.clock.monotonic()
        try:
            acquired = self._try(api, now, extra_wait)
            self.reachable = True
        except Exception as exc:  # API, connection (urllib3) or decoding errors
            status = getattr(exc, "status", None)
            log.debug("lease %s/%s: %s", self.namespace, self.name, status or exc)
            acquired = False
            self.reachable = status is not None  # an HTTP answer, if not the wanted one
        if acquired:
            self._renewed_at = now
            self.leading = True
        elif self.leading and now - self._renewed_at > self.timing.renew_deadline:
            log.warning("lease %s/%s: could not renew for %.0fs; no longer leading",
                        self.namespace, self.name, now - self._renewed_at)
            self.leading = False
        return self.leading

    def _try(self, api: ClusterAccess, now: float, extra_wait: float) -> bool:
        ref = lease_ref(self.name, self.namespace)
        lease = api.get(ref)
        if lease is None:
            api.create({**ref, "spec": self._spec(None)})  # 409 if another was faster
            return True
        requested = (lease["metadata"].get("annotations") or {}).get(REQUEST_ANNOTATION)
        if requested != self._request:
            self._request = requested
            self.request = requested.split(" ", 1)[0] if requested else None
        spec = lease.get("spec") or {}
        record = (spec.get("holderIdentity"), spec.get("leaseDurationSeconds"),
                  spec.get("renewTime"), spec.get("leaseTransitions"))
        if record != self._seen:
            self._seen, self._seen_at = record, now
        holder = spec.get("holderIdentity") or ""
        if holder != self.identity:
            duration = spec.get("leaseDurationSeconds") or self.timing.duration
            free_after = self._seen_at + extra_wait + (duration if holder else 0.0)
            if now < free_after:
                self.leading = False
                return False
        api.patch(ref, _versioned(lease, self._spec(spec)))  # 409 if it changed
        return True

    def _spec(self, old: Obj | None) -> Obj:
        now = _stamp(self.clock)
        mine = old is not None and old.get("holderIdentity") == self.identity
        transitions = int((old or {}).get("leaseTransitions") or 0)
        return {"holderIdentity": self.identity,
                "leaseDurationSeconds": int(self.timing.duration),
                "acquireTime": (old or {}).get("acquireTime") if mine else now,
                "renewTime": now,
                "leaseTransitions": transitions if mine or old is None else transitions + 1}

    def relay(self, api: ClusterAccess, revision: str) -> bool:
        """Ask this Lease's holder for a pass at ``revision``; whether the note was written."""

        note = {"metadata": {"annotations": {REQUEST_ANNOTATION: f"{revision} {self.clock()}"}}}
        try:
            api.patch(lease_ref(self.name, self.namespace), note)
            return True
        except Exception as exc:  # API, connection (urllib3) or decoding errors
            log.warning("lease %s/%s: could not relay %s: %s", self.namespace, self.name,
                        revision[:12], getattr(exc, "status", None) or exc)
            return False

    def release(self, api: ClusterAccess) -> bool:
        """Give the Lease up (only if this candidate still holds it); whether it did."""

        was_leading, self.leading = self.leading, False
        if not was_leading:
            return False
        try:
            lease = api.get(lease_ref(self.name, self.namespace))
            if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                return False
            api.patch(lease, _versioned(lease, {"holderIdentity": "", "leaseDurationSeconds": 1,
                                                "renewTime": _stamp(self.clock)}))
            return True
        except Exception as exc:  # API, connection (urllib3) or decoding errors
            log.warning("lease %s/%s: release failed: %s", self.namespace, self.name, exc)
            return False


def lease_name(base: str, shard: int, shards: int) -> str:
    """``base`` for one shard, ``base-<i>-of-<n>`` for several."""
    return base if shards == 1 else f"{base}-{shard}-of-{shards}"


def _dns_label(text: str) -> str:
    """A Lease-name-safe, still unique form of a replica identity."""
    digest = hashlib.blake2b(text.encode(), digest_size=4).hexdigest()
    return (re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:40] or "replica") + "-" + digest


class Roster:
    """Which replicas campaign for the shards, so a replica leads only its fair share.

    Every replica renews a member Lease of its own (labelled :data:`MEMBER_LABEL`); a member
    whose Lease changed within one lease duration (by this process's clock) counts as
    alive. A replica leads at most ``ceil(shards / alive members)`` shards and hands a
    surplus shard back when another replica joins.
    """

    def __init__(self, base: str, namespace: str, identity: str, timing: LeaseTiming, *,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.base = base
        self.namespace = namespace
        self.identity = identity
        self.timing = timing
        self.clock = clock
        self.name = f"{base}-member-{_dns_label(identity)}"
        self._seen: dict[str, tuple[Any, float]] = {}
        self.members = 1

    def count(self, api: ClusterAccess) -> int:
        """Renew this replica's member Lease and count the live members (itself included)."""
        from kubernetes.dynamic.exceptions import NotFoundError

        now = self.clock.monotonic()
        ref = lease_ref(self.name, self.namespace)
        spec = {"holderIdentity": self.identity, "renewTime": _stamp(self.clock),
                "leaseDurationSeconds": int(self.timing.duration)}
        try:
            try:
                api.patch(ref, {"spec": spec})
            except NotFoundError:
                api.create({**ref, "metadata": {**ref["metadata"],
                                                "labels": {MEMBER_LABEL: self.base}},
                            "spec": spec})
            leases = api.list(LEASE, namespace=self.namespace,
                              label_selector=f"{MEMBER_LABEL}={self.base}")["items"]
        except Exception as exc:  # API, connection (urllib3) or decoding errors
            log.debug("member lease %s: %s", self.name, getattr(exc, "status", None) or exc)
            return self.members
        alive = 0
        for lease in leases:
            name = lease["metadata"]["name"]
            renewed = (lease.get("spec") or {}).get("renewTime")
            if self._seen.get(name, (None, 0.0))[0] != renewed:
                self._seen[name] = (renewed, now)
            if name == self.name or now - self._seen[name][1] < self.timing.duration:
                alive += 1
        self.members = max(1, alive)
        return self.members

    def leave(self, api: ClusterAccess) -> None:

        try:
            api.delete(lease_ref(self.name, self.namespace))
        except Exception as exc:  # API, connection (urllib3) or decoding errors
            log.debug("member lease %s: %s", self.name, exc)


class Campaign:
    """Runs the electors of every shard in one thread and reports which shards it leads."""

    def __init__(self, api: ClusterAccess, electors: Sequence[Elector], timing: LeaseTiming,
                 on_change: Callable[[frozenset[int]], None] = lambda _leading: None,
                 on_request: Callable[[str], None] = lambda _revision: None, *,
                 roster: Roster | None = None, pass_lock: threading.Lock | None = None,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        timing.check()
        self.clock = clock
        self.api = api
        self.electors = list(electors)
        self.timing = timing
        self.on_change = on_change
        self.on_request = on_request
        self.roster = roster
        self.pass_lock = pass_lock or threading.Lock()
        """Held by the worker during a pass: a shard is only handed over between passes."""
        self._leading: frozenset[int] = frozenset()
        self._lock = threading.Lock()
        self.ticked = threading.Event()
        """Set after the first round of ticks (the host cluster answered or not)."""

    @property
    def leading(self) -> frozenset[int]:
        with self._lock:
            return self._leading

    def fair_share(self) -> int:
        members = self.roster.count(self.api) if self.roster is not None else 1
        return -(-len(self.electors) // members)

    def tick(self) -> frozenset[int]:
        """One round over every shard's Lease, then hand a surplus shard back."""
        fair = self.fair_share()
        for elector in self.electors:
            leading = sum(1 for e in self.electors if e.leading)
            if not elector.leading and leading >= fair:
                continue
            elector.tick(self.api, 0.0 if elector.leading else leading * self.timing.duration)
        surplus = [e for e in self.electors if e.leading][fair:]
        if surplus and self.pass_lock.acquire(blocking=False):
            try:
                if surplus[-1].release(self.api):
                    log.info("handed %s over: %d replicas share %d shards", surplus[-1].name,
                             self.roster.members if self.roster else 1, len(self.electors))
                return self._publish()
            finally:
                self.pass_lock.release()
        return self._publish()

    def _publish(self) -> frozenset[int]:
        leading = frozenset(i for i, e in enumerate(self.electors) if e.leading)
        requests = {e.request for e in self.electors if e.leading and e.request}
        for elector in self.electors:
            elector.request = None
        reached = any(e.reachable for e in self.electors)
        with self._lock:
            changed = leading != self._leading or (reached and not self.ticked.is_set())
            self._leading = leading
        if reached:
            self.ticked.set()
        if changed:
            self.on_change(leading)
        for revision in requests:
            self.on_request(revision)
        return leading

    def relay(self, revision: str) -> list[str]:
        """Pass a push on to the leaders of the shards this process does not lead."""
        return [e.name for e in self.electors
                if not e.leading and e.relay(self.api, revision)]

    def run(self, stop: threading.Event) -> None:
        """Tick every ``retry`` seconds until ``stop`` is set."""
        while not stop.is_set():
            started = self.clock.monotonic()
            self.tick()
            self.clock.wait_event(
                stop, max(0.0, self.timing.retry - (self.clock.monotonic() - started)))

    def release(self) -> list[str]:
        """Release every held Lease (and leave the roster); the names of those released."""
        released = [e.name for e in self.electors if e.release(self.api)]
        if self.roster is not None:
            self.roster.leave(self.api)
        with self._lock:
            self._leading = frozenset()
        return released
