"""The SLIs, the canary and the SLOs inside one ``serve`` process: what each pass, each API
call and each probe measured goes to the metrics and, each finished minute, to the insight
store; the SLOs of the served revision are evaluated from the store for ``/api/v1/slos``
and the console (at most once every ``CACHE_SECONDS``)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

from prometheus_client import CollectorRegistry

from pincompile.contract import DEFAULT_SLOS, Objective, Result, verification
from reconciler.canary.probe import ProbeResult
from reconciler.canary.schedule import Canary
from reconciler.clients.connect import Connection, KubeconfigError
from reconciler.model import PassReport
from reconciler.slo.launches import LaunchTracker
from reconciler.slo.report import SLOState, evaluate
from reconciler.slo.sli import SLIs
from reconciler.store import Store
from reconciler.store import verification as kept

log = logging.getLogger("pincompile.serve.slo")
HOST = "host"
FLUSH_SECONDS = 60.0
CACHE_SECONDS = 30.0


class SLOService:
    """Measures, probes and evaluates; :meth:`start` its threads, :meth:`close` them."""

    def __init__(self, registry: CollectorRegistry, compiled: Callable[[], Result | None], *,
                 applied: Callable[[], Result | None] | None = None,
                 kubeconfig: str | None, identity: str, store: Store | None = None,
                 responsible: Callable[[Sequence[str]], frozenset[str] | None] | None = None,
                 canary: bool = False) -> None:
        self.slis = SLIs(registry)
        self.compiled = compiled
        self.kubeconfig, self.identity, self.store = kubeconfig, identity, store
        self.launches = LaunchTracker(self._connection, lambda cluster, tier, seconds:
                                      self.slis.launch(cluster, tier, "rollout", seconds))
        self.canary = Canary(kubeconfig, applied or compiled,
                             responsible=responsible or (lambda _c: None),
                             record=[self.record_probe])
        self.scheduled = canary
        """Whether the canary probes on its schedule (``--canary``); ``verify`` runs its
        probes either way."""
        self._stop = threading.Event()
        self._connections: dict[str, Connection] = {}
        self._lock = threading.Lock()
        self._cached: tuple[float, list[SLOState]] | None = None

    # -- measuring -----------------------------------------------------------------------
    def observe_pass(self, report: PassReport, push_latency: float | None) -> None:
        """A finished pass: each member cluster's reconcile latency, its push latency, and
        the rollouts it started (followed for the launch SLI)."""
        for name, cluster in report.clusters.items():
            if name != HOST and cluster.seconds > 0:
                self.slis.reconcile(name, cluster.seconds)
        if push_latency is not None:
            self.slis.push_to_applied(push_latency)
        self.launches.observe(report)

    def record_probe(self, result: ProbeResult) -> None:
        self.slis.probe(result.cluster, result.tier, result.stage, result.launch_seconds)
        if self.store is not None:
            kept.add_probe(self.store, kept.ProbeRecord(
                result.cluster, result.tier, result.started, result.ok, result.stage,
                result.message, result.launch_seconds, result.seconds, result.requests))

    def flush(self, *, final: bool = False) -> int:
        """Hand the finished minutes (every minute when ``final``) to the store."""
        taken = self.slis.tally.take(None if final else time.time())
        if self.store is None or not taken:
            return 0
        return kept.add_samples(self.store, taken, self.identity)

    # -- evaluating ----------------------------------------------------------------------
    def objectives(self) -> tuple[Objective, ...]:
        """The served revision's SLOs (the defaults before a revision was compiled)."""
        result = self.compiled()
        if result is None or not result.ok:
            return DEFAULT_SLOS
        return verification(result.sources).objectives

    def states(self, now: datetime | None = None) -> list[SLOState]:
        """Every SLO now (from the store; recomputed at most every ``CACHE_SECONDS``)."""
        cached = self._cached
        if now is None and cached is not None and time.monotonic() - cached[0] < CACHE_SECONDS:
            return cached[1]
        states = evaluate_all(self.store, self.objectives(), now or datetime.now(UTC))
        if now is None:
            self._cached = (time.monotonic(), states)
        return states

    # -- threads -------------------------------------------------------------------------
    def start(self) -> None:
        self.launches.start()
        threading.Thread(target=self._flushing, name="sli-flush", daemon=True).start()
        if self.scheduled:
            threading.Thread(target=self.canary.run, args=(self._stop,), name="canary",
                             daemon=True).start()

    def _flushing(self) -> None:
        while not self._stop.wait(FLUSH_SECONDS):
            try:
                self.flush()
            except Exception:  # the store down for a while: the tally keeps counting
                log.exception("writing SLI samples failed")

    def close(self) -> None:
        self._stop.set()
        self.launches.close()
        try:
            self.flush(final=True)
        except Exception:
            log.exception("writing the last SLI samples failed")
        self.canary.close()
        with self._lock:
            for conn in self._connections.values():
                conn.close()

    def _connection(self, cluster: str) -> Connection | None:
        result = self.compiled()
        entry = result.catalog.clusters.get(cluster) if result is not None else None
        if entry is None:
            return None
        with self._lock:
            if cluster not in self._connections:
                try:
                    self._connections[cluster] = Connection(cluster, entry.resource.context,
                                                            self.kubeconfig)
                except (KubeconfigError, OSError):
                    return None
            return self._connections[cluster]


def evaluate_all(store: Store | None, objectives: Sequence[Objective], now: datetime
                 ) -> list[SLOState]:
    """Every SLO's state at ``now`` from the store's samples (no events without one)."""
    longest: dict[str, float] = {}
    for objective in objectives:
        longest[objective.sli] = max(longest.get(objective.sli, 0.0), objective.window_seconds,
                                     3 * 86400.0)
    by_sli = {sli: (kept.samples(store, sli, since=now - timedelta(seconds=seconds))
                    if store is not None else []) for sli, seconds in longest.items()}
    return [evaluate(o, by_sli[o.sli], now) for o in objectives]
