"""Prometheus metrics of one ``serve`` process (its own registry, so tests can run several)."""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from reconciler.model import PassReport

PREFIX = "pincompile_serve"
CONTENT_TYPE = CONTENT_TYPE_LATEST


class Metrics:
    """Every metric ``/metrics`` shows; :meth:`observe_pass` records one pass."""

    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.pass_seconds = Histogram(
            f"{PREFIX}_pass_duration_seconds", "Wall time of one pass (fetch, compile, apply)",
            ["outcome"], registry=r,
            buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600))
        self.push_to_applied = Histogram(
            f"{PREFIX}_push_to_applied_seconds", "From a push webhook's arrival to the end of "
            "the pass that applied its revision", registry=r,
            buckets=(0.5, 1, 2, 3, 5, 10, 30, 60, 120, 300))
        self.objects = Counter(
            f"{PREFIX}_objects_total", "Objects written, by member cluster and action "
            "(created, updated, replaced, pruned)", ["cluster", "action"], registry=r)
        self.drift = Counter(
            f"{PREFIX}_drift_objects_total", "Objects found changed in a member cluster and "
            "restored while the revision stayed the same (a resync that had to write)",
            ["cluster"], registry=r)
        self.unconverged = Gauge(
            f"{PREFIX}_unconverged_objects", "What the last pass left different from the "
            "specs, by member cluster and reason (conflict, rejected, prune held, rollout "
            "halted)", ["cluster", "reason"], registry=r)
        self.unconverged_passes = Counter(
            f"{PREFIX}_unconverged_passes_total", "Passes that reached every cluster but left "
            "something different from the specs", registry=r)
        self.cluster_errors = Counter(
            f"{PREFIX}_cluster_errors_total", "Passes that failed in a member cluster",
            ["cluster"], registry=r)
        self.pass_errors = Counter(
            f"{PREFIX}_pass_errors_total", "Passes that applied nothing, by stage "
            "(fetch, compile, reconcile)", ["stage"], registry=r)
        self.last_applied = Gauge(
            f"{PREFIX}_last_applied_revision", "1 for the revision of the last successful pass",
            ["revision"], registry=r)
        self.last_applied_time = Gauge(
            f"{PREFIX}_last_applied_timestamp_seconds",
            "Unix time of the last successful pass", registry=r)
        self.last_applied_age = Gauge(
            f"{PREFIX}_last_applied_age_seconds",
            "Seconds since the last successful pass (-1 before the first)", registry=r)
        self.last_applied_age.set_function(self._age)
        self.webhooks = Counter(
            f"{PREFIX}_webhook_requests_total", "Webhook requests by provider and result "
            "(accepted, ignored, ping, unauthorized, too_large, bad_request, replayed, "
            "other_repository)",
            ["provider", "result"], registry=r)
        self.leader = Gauge(
            f"{PREFIX}_leader", "1 while this process leads the shard", ["shard"], registry=r)
        self._applied_at: float | None = None
        self._revision: str | None = None
        self._unconverged_seen: set[tuple[str, str]] = set()

    def _age(self) -> float:
        return -1.0 if self._applied_at is None else time.time() - self._applied_at

    def observe_pass(self, report: PassReport, *, stage: str | None, drift: bool) -> None:
        """Record a finished pass; ``stage`` names what failed before any cluster was touched,
        ``drift`` says the revision was already applied (so any write corrected drift)."""
        outcome = "error" if not report.ok else "ok" if report.converged else "unconverged"
        self.pass_seconds.labels(outcome).observe(report.seconds)
        if stage is not None:
            self.pass_errors.labels(stage).inc()
            return
        self._set_unconverged(report)
        for name, cluster in report.clusters.items():
            for action, refs in (("created", cluster.created), ("updated", cluster.updated),
                                 ("replaced", cluster.replaced), ("pruned", cluster.pruned)):
                if refs:
                    self.objects.labels(name, action).inc(len(refs))
            if drift and cluster.writes:
                self.drift.labels(name).inc(cluster.writes)
            if cluster.error is not None:
                self.cluster_errors.labels(name).inc()
        if report.ok:
            if self._revision is not None and self._revision != report.revision:
                self.last_applied.remove(self._revision)
            self._revision = report.revision
            self.last_applied.labels(report.revision).set(1)
            self._applied_at = time.time()
            self.last_applied_time.set(self._applied_at)

    def _set_unconverged(self, report: PassReport) -> None:
        """The gauge holds the last pass's counts (zero for what was cleared since)."""
        counts: dict[tuple[str, str], int] = {}
        for cluster, item in report.unconverged:
            counts[(cluster, str(item.left))] = counts.get((cluster, str(item.left)), 0) + 1
        for labels in self._unconverged_seen - set(counts):
            self.unconverged.labels(*labels).set(0)
        for labels, n in counts.items():
            self.unconverged.labels(*labels).set(n)
        self._unconverged_seen |= set(counts)
        if report.ok and not report.converged:
            self.unconverged_passes.inc()

    def set_leading(self, shards: int, leading: frozenset[int]) -> None:
        for shard in range(shards):
            self.leader.labels(str(shard)).set(1 if shard in leading else 0)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
