"""What the store keeps, as plain values: an event on an app, an applied revision and a
PinScaler's replicas at one time."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from reconciler.model import AppKey

MESSAGE_LIMIT = 4096
"""Characters kept of an event message or a revision's detail (Kubernetes keeps 1 KiB)."""


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
