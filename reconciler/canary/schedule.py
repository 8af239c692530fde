"""The canary of ``serve --canary``: every ``interval`` of the policy in ``pincompile.yaml``,
while this replica leads, one probe (:mod:`reconciler.canary.probe`) per member cluster it
reconciles and tier the policy names; and on demand (``pincompile verify``), once.

Bounds: at most one probe per cluster at a time in this process (a round skips a cluster
whose probe from ``verify`` still runs; ``verify`` waits for it), at most
``parallel`` clusters probed at once, each probe within the policy's timeout. Before a
cluster is probed, objects of earlier probes older than the timeout (left by a process
that stopped mid-probe) are deleted.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from pincompile.contract import MANAGED_BY, CanaryPolicy, Result, verification
from reconciler.canary.probe import (
    CANARY_MANAGER,
    FAILURES,
    Probe,
    ProbeResult,
    reason_of,
)
from reconciler.clients.access import ClusterAccess
from reconciler.clients.connect import Connection, KubeconfigError
from reconciler.kinds import KindInfo

log = logging.getLogger("pincompile.serve.canary")
SWEPT_KINDS = (KindInfo("policy/v1", "PodDisruptionBudget"),
               KindInfo("apps/v1", "Deployment"))
Targets = list[tuple[str, str]]


class NoPolicy(Exception):
    """There is nothing to probe: no compiled revision, or no ``canary`` in it."""


def targets(result: Result, policy: CanaryPolicy, clusters: Iterable[str] | None = None
            ) -> Targets:
    """(cluster, tier) pairs to probe: the policy's clusters (or every member cluster that
    offers the tier and is not cordoned), narrowed to ``clusters`` when given."""
    catalog = result.catalog.clusters
    wanted = set(clusters) if clusters is not None else None
    pairs: Targets = []
    for name in sorted(catalog):
        if wanted is not None and name not in wanted:
            continue
        spec = catalog[name].resource.spec
        for tier in policy.tiers:
            named = name in policy.clusters
            if named or (not policy.clusters and spec.schedulable and tier in spec.tiers):
                pairs.append((name, tier))
    return pairs


class Canary:
    """Probes on a schedule (:meth:`run`) and on demand (:meth:`verify`)."""

    def __init__(self, kubeconfig: str | None, compiled: Callable[[], Result | None], *,
                 responsible: Callable[[Sequence[str]], frozenset[str] | None],
                 record: Sequence[Callable[[ProbeResult], object]] = (),
                 parallel: int = 4) -> None:
        self.kubeconfig = kubeconfig
        self.compiled = compiled
        """The compile of the revision last applied (None before the first)."""
        self.responsible = responsible
        """The member clusters this replica probes, of those given (None: not leading)."""
        self.record = list(record)
        self.parallel = parallel
        self.last: dict[tuple[str, str], ProbeResult] = {}
        self.note = "no round yet"
        """What the last round did, or why it did not run (for /status)."""
        self._busy: dict[str, threading.Lock] = {}
        self._connections: dict[str, Connection] = {}
        self._lock = threading.Lock()

    # -- what to probe -------------------------------------------------------------------
    def plan(self) -> tuple[Result, CanaryPolicy]:
        result = self.compiled()
        if result is None or not result.ok:
            raise NoPolicy("no revision applied yet")
        policy = verification(result.sources).canary
        if policy is None:
            raise NoPolicy("pincompile.yaml has no canary policy (canary: project: ...)")
        return result, policy

    # -- on a schedule -------------------------------------------------------------------
    def run(self, stop: threading.Event, first_delay: float = 5.0) -> None:
        """Rounds every interval until ``stop`` (the interval of the newest policy)."""
        wait = first_delay
        while not stop.wait(wait):
            began = time.monotonic()
            interval = self.round()
            wait = max(1.0, interval - (time.monotonic() - began))

    def round(self) -> float:
        """One scheduled round; the seconds until the next."""
        try:
            result, policy = self.plan()
        except NoPolicy as exc:
            self.note = str(exc)
            return 30.0
        pairs = targets(result, policy)
        mine = self.responsible(sorted({c for c, _ in pairs}))
        if mine is None:
            self.note = "standby: the leader probes"
            return policy.interval_seconds
        pairs = [(c, t) for c, t in pairs if c in mine]
        done = self._probe(result, policy, pairs, wait=False)
        failed = [f"{r.cluster}/{r.tier}" for r in done if not r.ok]
        self.note = (f"{datetime.now(UTC):%H:%M:%S}Z: {len(done)} probes, "
                     f"{len(failed)} failed{': ' + ', '.join(failed) if failed else ''}")
        return policy.interval_seconds

    # -- on demand -----------------------------------------------------------------------
    def verify(self, clusters: Sequence[str] | None = None) -> list[ProbeResult]:
        """Probe once now (every probed cluster, or ``clusters``), waiting for a probe that
        runs in a cluster already; NoPolicy, or ValueError naming unknown clusters."""
        result, policy = self.plan()
        if clusters:
            unknown = sorted(set(clusters) - set(result.catalog.clusters))
            if unknown:
                raise ValueError(f"no member cluster {', '.join(unknown)} in the specs")
        pairs = targets(result, policy, clusters or None)
        return self._probe(result, policy, pairs, wait=True)

    # -- probing -------------------------------------------------------------------------
    def _probe(self, result: Result, policy: CanaryPolicy, pairs: Targets, *, wait: bool
               ) -> list[ProbeResult]:
        by_cluster: dict[str, list[str]] = {}
        for cluster, tier in pairs:
            by_cluster.setdefault(cluster, []).append(tier)
        if not by_cluster:
            return []
        with ThreadPoolExecutor(min(self.parallel, len(by_cluster)),
                                thread_name_prefix="canary") as pool:
            runs = [pool.submit(self._cluster, result, policy, c, t, wait)
                    for c, t in sorted(by_cluster.items())]
            return [r for run in runs for r in run.result()]

    def _cluster(self, result: Result, policy: CanaryPolicy, cluster: str,
                 tiers: list[str], wait: bool) -> list[ProbeResult]:
        """The cluster's tiers, one probe after the other, holding its lock."""
        with self._lock:
            busy = self._busy.setdefault(cluster, threading.Lock())
        if not busy.acquire(timeout=policy.timeout_seconds + 30 if wait else 0):
            log.info("canary: %s is being probed already; skipped this round", cluster)
            return []
        try:
            conn = self._connection(result, cluster)
            if isinstance(conn, str):
                return [self._done(ProbeResult(cluster, t, datetime.now(UTC),
                                               stage="apply", message=conn)) for t in tiers]
            sweep(conn, _namespace(result, policy.project), policy.timeout_seconds)
            return [self._done(Probe(conn, result, policy, cluster, tier).run())
                    for tier in tiers]
        finally:
            busy.release()

    def _done(self, result: ProbeResult) -> ProbeResult:
        self.last[(result.cluster, result.tier)] = result
        level = logging.INFO if result.ok else logging.WARNING
        log.log(level, "canary %s/%s: %s%s", result.cluster, result.tier, result.stage,
                f" ({result.message})" if result.message else
                f" in {result.launch_seconds:.1f}s" if result.launch_seconds else "")
        for record in self.record:
            try:
                record(result)
            except Exception:  # a sink's bug must not stop the canary
                log.exception("recording a probe failed")
        return result

    def _connection(self, result: Result, cluster: str) -> Connection | str:
        context = result.catalog.clusters[cluster].resource.context
        with self._lock:
            conn = self._connections.get(context)
            if conn is None:
                try:
                    conn = Connection(cluster, context, self.kubeconfig)
                except (KubeconfigError, OSError) as exc:
                    return f"cannot connect: {exc}"
                self._connections[context] = conn
            return conn

    def requests(self) -> int:
        """API requests the canary has made to member clusters so far."""
        with self._lock:
            return sum(sum(c.stats.by_verb.values()) for c in self._connections.values())

    def status(self) -> dict[str, Any]:
        return {"note": self.note,
                "last": [r.document() for _, r in sorted(self.last.items())]}

    def close(self) -> None:
        with self._lock:
            for conn in self._connections.values():
                conn.close()
            self._connections.clear()


def _namespace(result: Result, project: str) -> str | None:
    entry = result.catalog.projects.get(project)
    return None if entry is None else str(entry.resource.spec.namespace)


def sweep(conn: ClusterAccess, namespace: str | None, older_than: float) -> int:
    """Delete probe objects in ``namespace`` created more than ``older_than`` seconds ago
    (a stopped process's); how many. Errors are logged, never raised."""
    if namespace is None:
        return 0
    swept = 0
    now = datetime.now(UTC)
    for kind in SWEPT_KINDS:
        try:
            listed = conn.list(kind, namespace=namespace,
                               label_selector=f"{MANAGED_BY}={CANARY_MANAGER}", lean=True)
            for item in listed["items"]:
                made = datetime.fromisoformat(str(item["metadata"]["creationTimestamp"])
                                              .replace("Z", "+00:00"))
                if (now - made).total_seconds() > older_than and conn.delete(item):
                    swept += 1
        except FAILURES as exc:
            log.warning("canary: could not sweep %s in %s/%s: %s", kind.kind, conn.name,
                        namespace, reason_of(exc))
    if swept:
        log.info("canary: deleted %d objects of earlier probes in %s", swept, conn.name)
    return swept
