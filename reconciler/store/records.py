"""What the store keeps, as plain values: an event on an app, an applied revision, a
PinScaler's replicas at one time, an app's and a cluster's usage samples; and what it
sums them to (:mod:`reconciler.store.usage`): costs and forecast points."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from reconciler.model import AppKey

MESSAGE_LIMIT = 4096
"""Characters kept of an event message or a revision's detail (Kubernetes keeps 1 KiB)."""


class StoreError(Exception):
    """The store cannot be opened or used; the message names the store without secrets."""


class NoSuchStore(StoreError):
    """The URL names no store ``serve`` made (a reader asked not to create one)."""


@dataclass(frozen=True)
class EventRecord:
    """One event of an app: a Kubernetes Event of one of its objects in a member cluster
    (``source="kubernetes"``) or pincompile's own (applied, pruned, failed over, …).

    ``uid`` identifies the event in its cluster; recording the same (cluster, uid) again
    updates ``count``, ``last_seen`` and ``message`` instead of adding a row, the way
    Kubernetes folds a repeated event."""

    app: AppKey
    reason: str
    message: str
    uid: str
    last_seen: datetime
    first_seen: datetime | None = None
    cluster: str = ""
    source: str = "pincompile"
    warning: bool = False
    object: str = ""
    """The native object the event is about, ``Kind/namespace/name``; empty for the app."""
    count: int = 1


@dataclass(frozen=True)
class RevisionRecord:
    """One revision applied to an app: when, from which commit and push, with what result."""

    app: AppKey
    revision: str
    applied_at: datetime
    result: str
    """The app's phase when the revision was first seen (``Healthy``, ``Progressing``, ...)."""
    commit: str = ""
    author: str = ""
    push: str = ""
    """The webhook delivery that triggered the pass; empty for a one-shot ``apply``."""
    detail: str = ""


@dataclass(frozen=True)
class ScaleSample:
    """A PinScaler's replicas across its clusters at one minute: what its HPAs want
    (``desired``), how many are ready, and the floor (the sum of their minReplicas)."""

    app: AppKey
    at: datetime
    desired: int
    ready: int
    floor: int


GIB = float(2**30)
Prices = tuple[float, float, float]
"""Per hour: a core, a GiB of memory, a GPU."""


@dataclass(frozen=True)
class UsageSample:
    """One app's pods in one cluster at time ``t``: what they request and use (None: the
    metrics API could not be read), and the tier's prices there (None: unpriced)."""

    t: float
    seconds: float
    cluster: str
    app: AppKey
    tier: str
    pods: int
    requested: tuple[float, float, float]
    """cpu cores, memory bytes, GPUs."""
    charged: tuple[float, float]
    """Summed pod by pod: the larger of request and use (cpu, memory)."""
    used: tuple[float, float] | None
    """cpu cores, memory bytes."""
    prices: Prices | None
    currency: str = ""


@dataclass(frozen=True)
class ClusterSample:
    """One member cluster at time ``t`` (cpu cores, memory bytes, GPUs)."""

    t: float
    seconds: float
    cluster: str
    allocatable: tuple[float, float, float]
    requested: tuple[float, float, float]
    charged: tuple[float, float]
    """Summed pod by pod: the larger of request and use (cpu, memory)."""
    used: tuple[float, float] | None
    prices: Prices | None
    """What idle capacity is counted at: the ondemand tier's prices."""
    currency: str = ""


@dataclass(frozen=True)
class AppCost:
    """One app over a window: its cost (priced samples), what it requested and used."""

    app: AppKey
    tier: str
    currency: str
    cost: float
    cost_by_resource: tuple[float, float, float]
    requested_hours: tuple[float, float, float]
    """Core-hours, byte-hours, GPU-hours requested."""
    measured_hours: tuple[float, float]
    """Core-hours and byte-hours requested while usage was measured."""
    used_hours: tuple[float, float]
    unpriced_hours: float
    """Hours of samples in a cluster or tier without prices (not in ``cost``)."""


@dataclass(frozen=True)
class ClusterCost:
    """One cluster over a window: what its allocatable capacity costs, and the part of it
    that no pod requested nor used (idle)."""

    cluster: str
    currency: str
    capacity_cost: float
    idle_cost: float
    unpriced_hours: float


Point = tuple[float, str, str, float, float, float | None, float | None]
"""(bucket start, project or cluster, tier or "", cpu, memory, cpu used, memory used)."""


class Discarded:
    """A store that keeps nothing: what a one-shot command uses without ``--store`` (the
    actions' events it would record are the clusters' to show; reads find nothing)."""

    def add_events(self, records: Iterable[EventRecord]) -> int:
        return 0

    def events(self, app: AppKey, *, since: datetime | None = None, limit: int = 0
               ) -> list[EventRecord]:
        return []

    def history(self, app: AppKey, *, limit: int = 0) -> list[RevisionRecord]:
        return []

    def samples(self, app: AppKey, *, since: datetime, limit: int = 0) -> list[ScaleSample]:
        return []

    def close(self) -> None:
        return None
