"""The overview's live capacity of the member clusters, for whoever may list the host's
clusters (the rule of ``GET /api/v1/clusters``, whose document it shows): per cluster what
its nodes allocate, what its running pods request of it, and what they use when the
metrics API answers.

Pages share one snapshot (:class:`CapacitySnapshots`): read in the background, at most one
read at a time, reused for ``max_age`` seconds; so a page, and its refresh every few
seconds by every open browser, waits for no member cluster (only the very first page
waits, a bounded moment, for the first read)."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from pincompile.contract import parse_quantity
from reconciler.api.insight import cluster_views
from reconciler.api.insight_models import ClusterInsight
from reconciler.commands.capacity_live import requested_of, used_of
from reconciler.insight.live import InsightSource

log = logging.getLogger(__name__)

RESOURCES = (("cpu", "CPU"), ("memory", "Memory"), ("nvidia.com/gpu", "GPUs"))
"""What the panel shows; GPUs only when some cluster's nodes allocate them."""
NOTE_MAX = 200
"""Characters of a member's problem shown (its API server's message)."""


@dataclass(frozen=True)
class Capacity:
    """One member cluster's row: per resource ``REQUESTED of ALLOCATABLE (SHARE)``."""

    requested: dict[str, str] = field(default_factory=dict)
    used: str = ""
    """What the pods use (``cpu 0.5, memory 0.2Gi``); empty: not known."""
    note: str = ""
    """Why a figure is missing: the member could not be read, or its metrics API."""


@dataclass(frozen=True)
class CapacityPanel:
    resources: list[tuple[str, str]]
    """(resource, label) of the columns."""
    clusters: dict[str, Capacity]
    read_at: str = ""
    """When the snapshot was read (UTC)."""
    problem: str = ""
    """Why there is no snapshot (the read failed)."""


def capacity_of(view: ClusterInsight, resources: list[tuple[str, str]]) -> Capacity:
    if not view.reachable:
        return Capacity(note=f"not read: {view.problem}"[:NOTE_MAX])
    requested = {r: requested_of(view.requested, view.allocatable, r) for r, _ in resources}
    used = "" if view.used is None else ", ".join(
        f"{label.lower()} {used_of(view.used, r)}" for r, label in resources[:2])
    return Capacity(requested=requested, used=used, note=view.problem[:NOTE_MAX])


def _allocates(view: ClusterInsight, resource: str) -> bool:
    value = (view.allocatable or {}).get(resource)
    return value is not None and parse_quantity(value) > Decimal(0)


def capacity_panel(views: list[dict[str, Any]], at: float) -> CapacityPanel:
    """The panel from the clusters' documents (``/api/v1/clusters``'s items) read at
    ``at``."""
    clusters = [ClusterInsight.model_validate(v) for v in views]
    resources = [(r, label) for r, label in RESOURCES
                 if r != "nvidia.com/gpu" or any(_allocates(c, r) for c in clusters)]
    return CapacityPanel(resources=resources,
                         clusters={c.name: capacity_of(c, resources) for c in clusters},
                         read_at=time.strftime("%H:%M:%S UTC", time.gmtime(at)))


class CapacitySnapshots:
    """The latest panel, read again in the background once older than ``max_age``
    seconds; without any yet, a caller waits up to ``first_wait`` seconds for the first."""

    def __init__(self, max_age: float = 10.0, first_wait: float = 2.0) -> None:
        self.max_age, self.first_wait = max_age, first_wait
        self._lock = threading.Lock()
        self._last: tuple[float, CapacityPanel] | None = None
        self._reading: threading.Event | None = None
        self.reads = 0
        """Reads started (one at a time, at most one per ``max_age``)."""

    def panel(self, source: InsightSource) -> CapacityPanel | None:
        """The latest snapshot (None: the first read has not ended in time)."""
        with self._lock:
            last, reading = self._last, self._reading
            if reading is None and (last is None or
                                    time.monotonic() - last[0] >= self.max_age):
                reading = self._reading = threading.Event()
                self.reads += 1
                threading.Thread(target=self._read, args=(source, reading), daemon=True,
                                 name="console-capacity").start()
        if last is None and reading is not None:
            reading.wait(self.first_wait)
            with self._lock:
                last = self._last
        return None if last is None else last[1]

    def _read(self, source: InsightSource, done: threading.Event) -> None:
        try:
            found = capacity_panel(cluster_views(source), time.time())
        except Exception as exc:  # a bug: the page says so, the thread keeps no state
            log.exception("reading the member clusters' capacity failed")
            found = CapacityPanel([], {}, problem=f"capacity could not be read: {exc}")
        with self._lock:
            self._last, self._reading = (time.monotonic(), found), None
        done.set()
