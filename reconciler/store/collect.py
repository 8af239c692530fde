"""Feed the store from the host cluster, so an app's timeline and history outlive the API
servers' event TTL: pincompile's own Events on app resources (applied, pruned, rollout
halted, failed over, ...), each app's Ready transitions, and every revision applied to it;
and, from the member clusters, the Kubernetes Events of the apps' objects.

The decisions (:func:`event_of`, :func:`transition_of`, :func:`revision_of`) are pure;
:class:`HostCollector` reads the host through watches and writes what is new. Every
``serve`` replica may run one: records are keyed so that two replicas write each once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from sqlalchemy.exc import SQLAlchemyError

from reconciler.clients.cache import KindWatch
from reconciler.clients.connect import Connection
from reconciler.kinds import KindInfo
from reconciler.model import AppKey
from reconciler.store.records import EventRecord, RevisionRecord, ScaleSample
from reconciler.store.store import Store

log = logging.getLogger("pincompile.store")


class MemberEvents(Protocol):
    """The member clusters' Events of the apps' objects
    (:class:`reconciler.api.pods.MemberPods`)."""

    def watch(self, clusters: Iterable[str]) -> None: ...

    def watch_events(self) -> None: ...

    def app_events(self) -> list[tuple[str, Any, AppKey]]: ...

APP_EVENTS = "involvedObject.apiVersion=pincompute.io/v1"
"""Events whose object is an app resource on the host: the ones pincompile records."""
EVENT_KIND = KindInfo("v1", "Event")


def _time(stamp: Any) -> datetime | None:
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        return None


def _last_seen(event: Mapping[str, Any]) -> datetime | None:
    """When an Event last happened: a core/v1 Event's ``lastTimestamp``, an
    events.k8s.io one's series or ``eventTime`` (the scheduler writes those)."""
    return _time((event.get("series") or {}).get("lastObservedTime")
                 or event.get("lastTimestamp") or event.get("eventTime")
                 or (event.get("metadata") or {}).get("creationTimestamp"))


def _count(event: Mapping[str, Any]) -> int:
    return int((event.get("series") or {}).get("count") or event.get("count") or 1)


def event_of(event: Mapping[str, Any]) -> EventRecord | None:
    """The store's record of a host Event on an app resource (``None`` for another)."""
    involved = event.get("involvedObject") or {}
    meta = event.get("metadata") or {}
    seen = _last_seen(event)
    if not (involved.get("kind") and involved.get("name") and meta.get("uid") and seen):
        return None
    return EventRecord(
        app=(str(involved["kind"]), str(involved.get("namespace") or ""),
             str(involved["name"])),
        reason=str(event.get("reason") or ""), message=str(event.get("message") or ""),
        uid=str(meta["uid"]), last_seen=seen, first_seen=_time(event.get("firstTimestamp")),
        source="pincompile", warning=event.get("type") == "Warning", count=_count(event))


def member_event_of(cluster: str, event: Mapping[str, Any], app: AppKey
                    ) -> EventRecord | None:
    """The store's record of a member cluster's Event on one of ``app``'s objects (a pod,
    its Deployment, a ReplicaSet, its HPA, a Job, ...)."""
    involved = event.get("involvedObject") or {}
    meta = event.get("metadata") or {}
    seen = _last_seen(event)
    if not (meta.get("uid") and seen):
        return None
    return EventRecord(
        app=app, reason=str(event.get("reason") or ""),
        message=str(event.get("message") or event.get("note") or ""), uid=str(meta["uid"]),
        cluster=cluster, source="kubernetes", warning=event.get("type") == "Warning",
        object=f"{involved.get('kind') or ''}/{involved.get('namespace') or ''}/"
               f"{involved.get('name') or ''}",
        count=_count(event), last_seen=seen,
        first_seen=_time(event.get("firstTimestamp") or event.get("eventTime")) or seen)


def transition_of(app: AppKey, status: Mapping[str, Any]) -> EventRecord | None:
    """The app's Ready condition as an event at the time it last changed: ``Healthy``
    (ready) or the phase that made it not ready, with its message."""
    ready = {c.get("type"): c for c in status.get("conditions") or []}.get("Ready") or {}
    since = _time(ready.get("lastTransitionTime"))
    if since is None:
        return None
    reason = str(ready.get("reason") or status.get("phase") or "Unknown")
    return EventRecord(app=app, reason=f"Became{reason}",
                       message=str(ready.get("message") or ""),
                       uid=f"ready:{'/'.join(app)}:{ready.get('lastTransitionTime')}:{reason}",
                       last_seen=since, source="pincompile",
                       warning=ready.get("status") != "True")


def revision_of(app: AppKey, status: Mapping[str, Any],
                author_of: Callable[[str], str]) -> RevisionRecord | None:
    """The revision last applied to the app, with the phase it had when first seen."""
    revision, applied = status.get("lastAppliedRevision"), _time(status.get("lastAppliedTime"))
    if not revision or applied is None:
        return None
    commit = str(revision) if len(str(revision)) == 40 else ""
    return RevisionRecord(app=app, revision=str(revision), applied_at=applied,
                          result=str(status.get("phase") or "Unknown"), commit=commit,
                          author=author_of(commit) if commit else "",
                          detail=str(status.get("message") or ""))


SAMPLE_EVERY = timedelta(minutes=15)
"""A PinScaler's replicas are sampled when they change, and at least this often."""


def sample_of(app: AppKey, status: Mapping[str, Any], now: datetime) -> ScaleSample | None:
    """A PinScaler's replicas now, at the minute (so replicas sampling in the same minute
    write one row); None for another kind."""
    if app[0] != "PinScaler":
        return None

    def number(field: str) -> int:
        value = status.get(field)
        return max(0, int(value)) if isinstance(value, int) else 0
    return ScaleSample(app=app, at=now.replace(second=0, microsecond=0),
                       desired=number("replicas"), ready=number("readyReplicas"),
                       floor=number("floor"))


def samples_due(statuses: Mapping[AppKey, Mapping[str, Any]],
                sampled: Mapping[AppKey, ScaleSample], now: datetime) -> list[ScaleSample]:
    """PinScalers whose replicas changed since last ``sampled``, or were sampled
    ``SAMPLE_EVERY`` ago (a change in the minute last sampled waits for the next one)."""
    due = []
    for app, status in statuses.items():
        sample = sample_of(app, status, now)
        if sample is None:
            continue
        last = sampled.get(app)
        if last is None or sample.at - last.at >= SAMPLE_EVERY or (
                sample.at > last.at and (sample.desired, sample.ready, sample.floor)
                != (last.desired, last.ready, last.floor)):
            due.append(sample)
    return due


class HostCollector:
    """Every ``interval`` seconds, write to the store what is new on the host: Events of
    app resources (one watch) and, from the apps' statuses (``statuses``, kept by a
    watch elsewhere), Ready transitions and applied revisions; with ``members``, the
    member clusters' Events of the apps' objects. A pass hands what it published to
    :meth:`record_pass` at once. Drops what is past the store's retention once an hour."""

    def __init__(self, host: Connection, store: Store,
                 statuses: Callable[[], Mapping[AppKey, Mapping[str, Any]]], *,
                 author_of: Callable[[str], str] = lambda _commit: "",
                 members: MemberEvents | None = None, interval: float = 2.0) -> None:
        self.store, self.statuses, self.author_of = store, statuses, author_of
        self.members = members
        self.interval = interval
        self.stop = threading.Event()
        self._events = KindWatch(host, EVENT_KIND, self.stop, field_selector=APP_EVENTS)
        self._seen_events: dict[str, tuple[int, datetime]] = {}
        self._seen_apps: dict[AppKey, tuple[Any, Any]] = {}
        self._apps_lock = threading.Lock()
        self._sampled: dict[AppKey, ScaleSample] = {}
        self.thread = threading.Thread(target=self._run, daemon=True, name="store-collector")

    def start(self) -> None:
        self._events.thread.start()
        self.thread.start()

    def close(self) -> None:
        self.stop.set()

    def _run(self) -> None:
        ticks = 0
        while not self.stop.wait(self.interval):
            try:
                self.collect()
                ticks += 1
                if ticks % max(1, round(3600 / self.interval)) == 0:
                    self.store.prune()
            except SQLAlchemyError as exc:
                log.warning("the insight store refused a write: %s",
                            str(getattr(exc, "orig", exc)).splitlines()[0])

    def collect(self) -> int:
        """One round; the number of records written. What was seen is remembered only
        for the events and apps there now, so memory follows the host, not its past."""
        with self._events.lock:
            events = [r for r in map(event_of, self._events.objects.values()) if r is not None]
        statuses = self.statuses()
        events += self._member_events(statuses)
        seen_events = {r.uid: (r.count, r.last_seen) for r in events}
        fresh = [r for r in events if self._seen_events.get(r.uid) != seen_events[r.uid]]
        samples = samples_due(statuses, self._sampled, datetime.now(UTC))
        with self._apps_lock:
            changes, revisions, seen_apps = self._app_changes(statuses)
            written = (self.store.add_events(fresh + changes)
                       + self.store.add_revisions(revisions) + self.store.add_samples(samples))
            self._seen_apps = seen_apps  # only once written
        self._seen_events = seen_events
        self._sampled = {**{a: v for a, v in self._sampled.items() if a in statuses},
                         **{s.app: s for s in samples}}
        return written

    def record_pass(self, statuses: Mapping[AppKey, Mapping[str, Any]], *,
                    push: str = "") -> int:
        """Write the Ready transitions and revisions of the status documents a pass has
        just published, so none is lost when the next pass replaces it within a round;
        ``push``: the webhook delivery that triggered the pass. The number of records
        written."""
        try:
            with self._apps_lock:
                changes, revisions, seen_apps = self._app_changes(statuses)
                revisions = [replace(r, push=push) for r in revisions]
                written = self.store.add_events(changes) + self.store.add_revisions(revisions)
                self._seen_apps.update(seen_apps)
            return written
        except SQLAlchemyError as exc:
            log.warning("the insight store refused a write: %s",
                        str(getattr(exc, "orig", exc)).splitlines()[0])
            return 0

    def _app_changes(self, statuses: Mapping[AppKey, Mapping[str, Any]]
                     ) -> tuple[list[EventRecord], list[RevisionRecord],
                                dict[AppKey, tuple[Any, Any]]]:
        """The Ready transitions and revisions not seen before, and what is seen now. A
        revision is recorded when it is first applied, not again when a later pass writes
        for it (the next zone of its rollout, a repaired drift)."""
        seen_apps: dict[AppKey, tuple[Any, Any]] = {}
        changes: list[EventRecord] = []
        revisions: list[RevisionRecord] = []
        for app, status in statuses.items():
            change = transition_of(app, status)
            revision = revision_of(app, status, self.author_of)
            seen_apps[app] = (change and change.uid, revision and revision.revision)
            before = self._seen_apps.get(app, (None, None))
            if change is not None and before[0] != seen_apps[app][0]:
                changes.append(change)
            if revision is not None and before[1] != seen_apps[app][1]:
                revisions.append(revision)
        return changes, revisions, seen_apps

    def _member_events(self, statuses: Mapping[AppKey, Mapping[str, Any]]
                       ) -> list[EventRecord]:
        """Events of the apps' objects in every member cluster an app is placed in."""
        if self.members is None:
            return []
        self.members.watch({str(c["name"]) for status in statuses.values()
                            for c in status.get("clusters") or [] if c.get("name")})
        self.members.watch_events()
        return [r for c, e, a in self.members.app_events()
                if (r := member_event_of(c, e, a)) is not None]
