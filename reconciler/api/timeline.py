"""An app's Events read now from the clusters, for a command run without ``serve``'s
insight store: pincompile's own Events on the app's resource on the host (applied, pruned,
rollout halted, failed over, ...) and the Kubernetes Events of its objects in every member
cluster it is placed in (its pods, ReplicaSets, Deployment, HPA, Jobs, ...), as long as
the API servers keep them (their event TTL, an hour by default).

A member's Events are LISTed once in the project's namespace; an Event is the app's when
its object is: the app's objects of each kind the Events name are LISTed with the app's
labels (one LIST per kind); an object no longer there (a pod replaced by a rollout, a
ReplicaSet pruned) is the app's when its owner's name, the name without its last one or two
``-suffix`` parts (pod → ReplicaSet → Deployment), is one of the app's objects and no other
app of the project has a longer name that fits it (every object pincompile compiles for
an app is named after the app)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

from kubernetes.dynamic.exceptions import ResourceNotFoundError

from pincompile.manifest import LABEL_APP, LABEL_KIND, LABEL_PROJECT
from reconciler.clients.connect import Connection
from reconciler.errors import CLUSTER_ERRORS, explain
from reconciler.host import API_VERSION
from reconciler.model import AppKey, Obj
from reconciler.store.records import EventRecord, RevisionRecord

from .member_events import lean_event
from .objects import list_in, project_namespace

EVENTS_MOST = 2000
"""The most Events read of one namespace in one cluster (the newest of a longer list are
not missed: the API server lists oldest first, so it says so instead)."""
PARENTS: dict[str, tuple[tuple[str, str], ...]] = {
    "Pod": (("apps/v1", "ReplicaSet"), ("batch/v1", "Job"), ("apps/v1", "DaemonSet"),
            ("apps/v1", "Deployment"), ("batch/v1", "CronJob")),
    "ReplicaSet": (("apps/v1", "Deployment"),),
    "Job": (("batch/v1", "CronJob"),),
}
"""The kinds whose objects may own a gone object of a kind (up to two levels)."""

Members = Callable[[Iterable[str]], Mapping[str, Connection | str]]
"""A connection to each member cluster named, or why there is none."""


@dataclass(frozen=True)
class ClusterEvents:
    """What one cluster's read gave: the app's Events, or why it could not be read."""

    records: list[EventRecord]
    problem: str = ""


class ClustersTimeline:
    """Reads an app's Events from the host and its member clusters when asked (nothing
    watched, nothing kept)."""

    def __init__(self, host: Connection, members: Members) -> None:
        self.host, self.members = host, members
        self._namespaces: dict[str, str] = {}

    def events(self, app: AppKey, clusters: Iterable[str], siblings: Iterable[str]
               ) -> list[EventRecord]:
        """``app``'s Events now, oldest first: the host's and those of ``clusters`` (where
        it is placed); ``siblings``: the names of the other apps of its project. A cluster
        that cannot be read is a Warning record saying so."""
        others = [s for s in siblings if s != app[2]]
        found = self.members(sorted(set(clusters)))
        reads: list[tuple[str, Callable[[], ClusterEvents]]] = [("", partial(self._host, app))]
        for cluster, conn in sorted(found.items()):
            reads.append((cluster, partial(ClusterEvents, [], conn) if isinstance(conn, str)
                          else partial(self._member, conn, app, others)))
        records: list[EventRecord] = []
        with ThreadPoolExecutor(max_workers=8) as pool:
            for (cluster, _), done in zip(reads, pool.map(_attempt, [r for _, r in reads]),
                                          strict=True):
                records += done.records
                if done.problem:
                    records.append(unreadable(app, cluster, done.problem))
        return sorted(records, key=lambda r: (r.last_seen, r.cluster, r.uid))

    def _host(self, app: AppKey) -> ClusterEvents:
        from reconciler.store.collect import event_of  # the store's reading of an Event

        kind, project, name = app
        items = list_in(self.host, "v1", "Event", project, field_selector=(
            f"involvedObject.apiVersion={API_VERSION},involvedObject.kind={kind},"
            f"involvedObject.name={name}"))
        return ClusterEvents([r for e in items if (r := event_of(e)) is not None])

    def namespace(self, project: str) -> str:
        """The namespace of ``project``'s objects in the member clusters (asked once)."""
        if project not in self._namespaces:
            self._namespaces[project] = project_namespace(self.host, project)
        return self._namespaces[project]

    def _member(self, conn: Connection, app: AppKey, others: Sequence[str]) -> ClusterEvents:
        from reconciler.store.collect import member_event_of

        namespace = self.namespace(app[1])
        events = [lean for e in list_in(conn, "v1", "Event", namespace, limit=EVENTS_MOST)
                  if (lean := lean_event(e)) is not None and named_after(_name(lean), app[2])]
        kinds = kinds_to_list(events)
        selector = f"{LABEL_KIND}={app[0]},{LABEL_PROJECT}={app[1]},{LABEL_APP}={app[2]}"

        def owned(kind: tuple[str, str]) -> list[str]:
            try:
                return [str((o.get("metadata") or {}).get("name")) for o in
                        list_in(conn, *kind, namespace, label_selector=selector)]
            except ResourceNotFoundError:
                return []  # not served here (the kubeflow kinds)

        with ThreadPoolExecutor(max_workers=4) as pool:
            names = dict(zip(kinds, pool.map(owned, kinds), strict=True))
        mine = app_events(events, names, app[2], others)
        return ClusterEvents([r for e in mine
                              if (r := member_event_of(conn.name, e, app)) is not None])


def _attempt(read: Callable[[], ClusterEvents]) -> ClusterEvents:
    try:
        return read()
    except CLUSTER_ERRORS as exc:
        return ClusterEvents([], explain(exc))


def _name(event: Obj) -> str:
    return str((event.get("involvedObject") or {}).get("name") or "")


def named_after(name: str, app: str) -> bool:
    """Whether an object's name fits an app's (the app's own, or the app's and a suffix)."""
    return name == app or name.startswith(f"{app}-")


def kinds_to_list(events: Iterable[Obj]) -> list[tuple[str, str]]:
    """The (apiVersion, kind) of each object the Events name, and those that may own one
    of them."""
    kinds: set[tuple[str, str]] = set()
    for event in events:
        involved = event.get("involvedObject") or {}
        kind = str(involved.get("kind") or "")
        kinds.add((str(involved.get("apiVersion") or "v1"), kind))
        kinds.update(PARENTS.get(kind, ()))
    return sorted(kinds)


def app_events(events: Iterable[Obj], owned: Mapping[tuple[str, str], Iterable[str]],
               app: str, others: Sequence[str]) -> list[Obj]:
    """The Events whose object is the app's: one of ``owned`` (the app's objects by
    kind), or gone and named after one of them (its owner, up to two levels) and after no
    app of ``others`` whose name fits it better."""
    by_kind = {kind: set(names) for (_, kind), names in owned.items()}
    longer = [o for o in others if len(o) > len(app) and named_after(o, app)]
    mine = []
    for event in events:
        involved = event.get("involvedObject") or {}
        kind, name = str(involved.get("kind") or ""), _name(event)
        owners = set().union(*(by_kind.get(k, set()) for _, k in PARENTS.get(kind, ())))
        if name in by_kind.get(kind, ()) or (
                not any(named_after(name, o) for o in longer)
                and any(owner in owners for owner in _owners(name))):
            mine.append(event)
    return mine


def _owners(name: str) -> list[str]:
    """The names a gone object's owner may have: without its last one or two
    ``-suffix`` parts."""
    first = name.rsplit("-", 1)[0]
    return [first, first.rsplit("-", 1)[0]] if first != name else []


def unreadable(app: AppKey, cluster: str, why: str) -> EventRecord:
    """A Warning in the timeline: ``cluster``'s Events (the host's, when empty) could
    not be read now."""
    where = cluster or "the host"
    return EventRecord(app=app, reason="EventsUnreadable",
                       message=f"the Events in {where} could not be read: {why}",
                       uid=f"unreadable:{cluster}", last_seen=datetime.now(UTC),
                       cluster=cluster, warning=True)


def merged(stored: Iterable[EventRecord], live: Iterable[EventRecord], limit: int
           ) -> list[EventRecord]:
    """The store's records and those read now, each (cluster, uid) once (the newer
    count), oldest first: the newest ``limit``."""
    by_uid: dict[tuple[str, str], EventRecord] = {}
    for record in (*stored, *live):
        key = (record.cluster, record.uid)
        if key not in by_uid or record.last_seen >= by_uid[key].last_seen:
            by_uid[key] = record
    return sorted(by_uid.values(), key=lambda r: (r.last_seen, r.cluster, r.uid))[-limit:]


def revisions(status: Mapping[str, Any], stored: Iterable[RevisionRecord], app: AppKey,
              limit: int) -> list[RevisionRecord]:
    """The revisions the store recorded and those the app's status keeps
    (``status.history``, written by every pass: ``apply`` and ``serve`` alike), each
    revision once (the store's record, which knows the author and push), newest first."""
    by_revision = {r.revision: r for r in stored}
    for entry in status.get("history") or []:
        revision = str(entry.get("revision") or "") if isinstance(entry, Mapping) else ""
        at = _time(entry.get("appliedAt")) if revision else None
        if at is None or revision in by_revision:
            continue
        by_revision[revision] = RevisionRecord(
            app=app, revision=revision, applied_at=at, result=str(entry.get("result") or ""),
            commit=revision if len(revision) == 40 else "")
    return sorted(by_revision.values(), key=lambda r: r.applied_at, reverse=True)[:limit]


def _time(stamp: Any) -> datetime | None:
    try:
        at = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo else at.replace(tzinfo=UTC)
