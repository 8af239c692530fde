"""``serve`` samples, every ``INTERVAL`` seconds, what each app's pods request and use in
each member cluster and what each cluster allocates, with the prices its Cluster spec
names then, into the insight store: what ``pincompile cost`` and the forecasts read.

Every replica samples; a sample's time is the start of its interval, so two replicas
write the same rows and the store keeps one. A pod is charged the larger of what it
requests and what it uses (the metrics API), resource by resource; a cluster's idle
capacity is what its nodes allocate that no pod is charged for, counted at its ondemand
prices.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from reconciler.insight.live import InsightSource
from reconciler.insight.records import Amounts, PodRecord, Reading, add
from reconciler.model import AppKey, Obj
from reconciler.store import Store
from reconciler.store.records import ClusterSample, Prices, UsageSample
from reconciler.store.usage import add_usage

log = logging.getLogger("pincompile.insight")
INTERVAL = 300.0
"""Seconds between samples (each stands for that long)."""
RESOURCES = ("cpu", "memory", "nvidia.com/gpu")


def prices_of(cr: Obj, tier: str) -> tuple[Prices | None, str]:
    """A Cluster resource's hourly prices for ``tier`` (a core, a GiB, a GPU) and their
    currency; None when it names none."""
    table = (cr.get("spec") or {}).get("prices") or {}
    tier_prices = table.get(tier) if isinstance(table, Mapping) else None
    if not isinstance(tier_prices, Mapping):
        return None, ""
    try:
        found = tuple(float(str(tier_prices.get(r, 0))) for r in RESOURCES)
    except ValueError:
        return None, ""  # not what the compiler lets through: unpriced, not a crash
    return (found[0], found[1], found[2]), str(table.get("currency") or "USD")


def _charged(pod: PodRecord, usage: Mapping[tuple[str, str], Amounts] | None) -> Amounts:
    used = (usage or {}).get((pod.namespace, pod.name), {})
    return {r: max(pod.requests.get(r, Decimal(0)), used.get(r, Decimal(0)))
            for r in ("cpu", "memory")}


def _three(values: Amounts) -> tuple[float, float, float]:
    cpu, memory, gpu = (float(values.get(r, Decimal(0))) for r in RESOURCES)
    return cpu, memory, gpu


def samples_of(cr: Obj, reading: Reading, t: float, seconds: float
               ) -> tuple[list[UsageSample], ClusterSample | None]:
    """One cluster's samples at ``t``: one per app (and tier) with pods there, and the
    cluster's own; none when it could not be read."""
    if reading.error is not None:
        return [], None
    usage = reading.usage
    by_app: dict[tuple[AppKey, str], list[PodRecord]] = {}
    for pod in reading.pods:
        if pod.app is not None:
            by_app.setdefault((pod.app, pod.tier), []).append(pod)
    apps = [_app_sample(cr, reading.cluster, app, tier, pods, usage, t, seconds)
            for (app, tier), pods in sorted(by_app.items())]
    allocatable: Amounts = {}
    for node in reading.nodes:
        add(allocatable, node.allocatable)
    on_nodes = [p for p in reading.pods if p.node]
    requested, charged, used = _sums(on_nodes, usage)
    prices, currency = prices_of(cr, "ondemand")
    cluster = ClusterSample(t, seconds, reading.cluster, _three(allocatable), _three(requested),
                            _three(charged)[:2], None if used is None else _three(used)[:2],
                            prices, currency)
    return apps, cluster


def _sums(pods: Iterable[PodRecord], usage: Mapping[tuple[str, str], Amounts] | None
          ) -> tuple[Amounts, Amounts, Amounts | None]:
    requested: Amounts = {}
    charged: Amounts = {}
    used: Amounts | None = None if usage is None else {}
    for pod in pods:
        add(requested, pod.requests)
        add(charged, _charged(pod, usage))
        if used is not None and usage is not None:
            add(used, usage.get((pod.namespace, pod.name), {}))
    return requested, charged, used


def _app_sample(cr: Obj, cluster: str, app: AppKey, tier: str, pods: list[PodRecord],
                usage: Mapping[tuple[str, str], Amounts] | None, t: float, seconds: float
                ) -> UsageSample:
    requested, charged, used = _sums(pods, usage)
    prices, currency = prices_of(cr, tier)
    return UsageSample(t, seconds, cluster, app, tier, len(pods), _three(requested),
                       _three(charged)[:2], None if used is None else _three(used)[:2],
                       prices, currency)


class UsageSampler:
    """Samples every member cluster the host knows, every ``interval`` seconds, in a
    thread (:meth:`sample` once, for a caller that keeps time itself)."""

    def __init__(self, source: InsightSource, store: Store, interval: float = INTERVAL
                 ) -> None:
        self.source, self.store, self.interval = source, store, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="usage-sampler")

    def sample(self, at: float | None = None) -> int:
        """Sample now, as the sample of time ``at`` (default: the start of the current
        interval); returns the rows offered to the store."""
        t = at if at is not None else time.time() // self.interval * self.interval
        clusters: dict[str, Any] = {o["metadata"]["name"]: o for o in self.source.clusters()}
        apps: list[UsageSample] = []
        totals: list[ClusterSample] = []
        for name, reading in self.source.readings(clusters).items():
            found, total = samples_of(clusters[name], reading, t, self.interval)
            apps += found
            totals += [total] if total is not None else []
        return add_usage(self.store, apps, totals)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval - time.time() % self.interval):
            try:
                self.sample()
            except SQLAlchemyError as exc:
                log.warning("usage samples not stored: %s", exc)
            except Exception:  # a bug: say so, and sample again next time
                log.exception("usage sampling")

    def close(self) -> None:
        self._stop.set()
