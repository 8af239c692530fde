"""The service level indicators ``serve`` measures from real traffic and from its canary,
as Prometheus metrics (names and labels in docs/slo.md, stable) and as per-minute tallies
for the insight store, which ``pincompile slo`` and ``/api/v1/slos`` read.

=============================================  =========  ============================
metric                                         type       labels
=============================================  =========  ============================
``pincompile_api_requests_total``              counter    ``group``, ``code`` (2xx..5xx)
``pincompile_api_request_duration_seconds``    histogram  ``group``
``pincompile_reconcile_cluster_seconds``       histogram  ``cluster``
``pincompile_launch_seconds``                  histogram  ``cluster``, ``tier``, ``source``
``pincompile_launch_failures_total``           counter    ``cluster``, ``tier``, ``source``
``pincompile_canary_probes_total``             counter    ``cluster``, ``tier``, ``result``
=============================================  =========  ============================

A latency event is good when it is within the objective's threshold (a histogram bucket);
a launch that never got every replica Ready (a failed probe, a rollout not Ready within
the last bucket) is a launch failure, always bad. An API call is bad when it is answered
5xx.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

from prometheus_client import CollectorRegistry, Counter, Histogram

from pincompile.contract import LATENCY_BUCKETS, PUSH_BUCKETS
from reconciler.store.verification import Labels, SLISample

API_REQUESTS = "pincompile_api_requests_total"
API_DURATION = "pincompile_api_request_duration_seconds"
RECONCILE = "pincompile_reconcile_cluster_seconds"
LAUNCH = "pincompile_launch_seconds"
LAUNCH_FAILURES = "pincompile_launch_failures_total"
CANARY_PROBES = "pincompile_canary_probes_total"
PUSH = "pincompile_serve_push_to_applied_seconds"
"""Observed by serve's own metrics (:mod:`reconciler.serve.metrics`); tallied here."""
API_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
MINUTE = 60
_DEBUGGING = re.compile(r"^/api/v1/apps/[^/]+/[^/]+/[^/]+/(logs|exec|pods)$")
_INSIGHT = re.compile(r"^/api/v1/apps/[^/]+/[^/]+/[^/]+/(events|history)$")


def route_group(path: str) -> str | None:
    """The SLI route group of an API path: ``workload`` (apps and their actions),
    ``debugging`` (pods, logs, exec), ``insight`` (timelines, history, SLOs, capacity,
    cost); None for what is no API call (the OpenAPI document, the console)."""
    if not path.startswith("/api/v1/") or path == "/api/v1/openapi.json":
        return None
    if _DEBUGGING.match(path):
        return "debugging"
    if _INSIGHT.match(path):
        return "insight"
    return "workload" if path.startswith("/api/v1/apps") else "insight"


def buckets_for(sli: str) -> tuple[float, ...]:
    return {"api-availability": (), "push-to-applied": PUSH_BUCKETS}.get(sli, LATENCY_BUCKETS)


class Tally:
    """Per-minute counts of every SLI (thread-safe); :meth:`take` hands finished minutes
    over to the store."""

    def __init__(self) -> None:
        self._counts: dict[tuple[str, Labels, int], list[int]] = {}
        self._lock = threading.Lock()

    def add(self, sli: str, labels: Labels, at: float, seconds: float | None,
            bad: bool = False) -> None:
        bounds = buckets_for(sli)
        key = (sli, labels, int(at // MINUTE))
        with self._lock:
            counts = self._counts.setdefault(key, [0] * (2 + len(bounds)))
            counts[0] += 1
            counts[1] += bad
            if seconds is not None and not bad:
                for i, bound in enumerate(bounds):
                    counts[2 + i] += seconds <= bound

    def take(self, before: float | None = None) -> list[SLISample]:
        """The minutes that ended before ``before`` (None: every minute), removed."""
        limit = None if before is None else int(before // MINUTE)
        with self._lock:
            keys = [k for k in self._counts if limit is None or k[2] < limit]
            taken = [(k, self._counts.pop(k)) for k in keys]
        return [SLISample(sli, labels, datetime.fromtimestamp(minute * MINUTE, UTC), c[0], c[1],
                       tuple(c[2:])) for (sli, labels, minute), c in taken]


class SLIs:
    """Records each SLI event in the metrics and the tally."""

    def __init__(self, registry: CollectorRegistry,
                 clock: Callable[[], float] = time.time) -> None:
        self.tally = Tally()
        self.now = clock
        self.api_requests = Counter(API_REQUESTS, "PinCompute API calls by route group and "
                                    "status class", ["group", "code"], registry=registry)
        self.api_seconds = Histogram(API_DURATION, "Seconds to the start of an API call's "
                                     "answer, by route group", ["group"], registry=registry,
                                     buckets=API_BUCKETS)
        self.reconcile_seconds = Histogram(
            RECONCILE, "Seconds one reconcile pass spent on one member cluster",
            ["cluster"], registry=registry, buckets=LATENCY_BUCKETS)
        self.launch_seconds = Histogram(
            LAUNCH, "Seconds from the first write of a launch to its pods Ready (source: "
            "canary, every replica; rollout, a reserved-tier rollout's first new pod)",
            ["cluster", "tier", "source"], registry=registry, buckets=LATENCY_BUCKETS)
        self.launch_failures = Counter(
            LAUNCH_FAILURES, "Launches whose pods never got Ready (failed probes, rollouts "
            "not Ready within the last bucket)", ["cluster", "tier", "source"],
            registry=registry)
        self.probes = Counter(CANARY_PROBES, "Canary probes by result (passed, or the stage "
                              "that failed)", ["cluster", "tier", "result"], registry=registry)

    def api(self, group: str, status: int, seconds: float) -> None:
        self.api_requests.labels(group, f"{status // 100}xx").inc()
        self.api_seconds.labels(group).observe(seconds)
        self.tally.add("api-availability", (("group", group),), self.now(), seconds,
                       bad=status >= 500)

    def reconcile(self, cluster: str, seconds: float) -> None:
        self.reconcile_seconds.labels(cluster).observe(seconds)
        self.tally.add("reconcile-latency", (("cluster", cluster),), self.now(), seconds)

    def push_to_applied(self, seconds: float) -> None:
        self.tally.add("push-to-applied", (), self.now(), seconds)

    def launch(self, cluster: str, tier: str, source: str, seconds: float | None) -> None:
        """A launch that got Ready in ``seconds`` (None: it never did)."""
        if seconds is None:
            self.launch_failures.labels(cluster, tier, source).inc()
        else:
            self.launch_seconds.labels(cluster, tier, source).observe(seconds)
        self.tally.add("launch-latency", (("cluster", cluster), ("tier", tier),
                                          ("source", source)), self.now(), seconds,
                       bad=seconds is None)

    def probe(self, cluster: str, tier: str, result: str, launch: float | None) -> None:
        """A canary probe: its result, and its launch (None: it did not launch)."""
        self.probes.labels(cluster, tier, result).inc()
        self.launch(cluster, tier, "canary", launch)
