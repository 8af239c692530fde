"""The last step of a pass: one status document per app (from its objects' live state and
what the other steps decided) and its Events, written to the host.

The documents themselves are built by :mod:`reconciler.status.document`; this module gathers each
app's objects across the members, adds the rollout, failover and PinScaler parts, and
writes what changed."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from reconciler.clients import pace
from reconciler.clients.access import ClusterAccess
from reconciler.clients.read import Key, key_of
from reconciler.desired import MemberState
from reconciler.errors import CLUSTER_ERRORS, explain
from reconciler.failover.decide import AppMove
from reconciler.model import AppKey, Health, Left, Obj, ObjectRef, Phase
from reconciler.plan.change import Action
from reconciler.rollout.plan import AppRollout
from reconciler.scaling.step import floor_status, hpas_by_app, replicas_seen
from reconciler.status import document
from reconciler.status.events import EventLog

#: Event reason for each kind of write a pass makes.
EVENT_REASONS = {Action.CREATE: "Applied", Action.UPDATE: "Applied",
                 Action.REPLACE: "Replaced", Action.PRUNE: "Pruned"}


@dataclass
class Decided:
    """What the pass's other steps decided, which the status documents tell."""

    rollouts: dict[AppKey, AppRollout] = field(default_factory=dict)
    moves: dict[AppKey, AppMove] = field(default_factory=dict)
    floor_totals: dict[AppKey, int] = field(default_factory=dict)
    """Replicas the survivors' floors hold per scaled app (failover)."""
    rebalanced: dict[AppKey, dict[str, Any]] = field(default_factory=dict)
    revisions: dict[AppKey, str] = field(default_factory=dict)
    """The commit that last changed each app's spec or compiled objects (its status's
    ``observedRevision``: a push that leaves an app alone rewrites nothing of it)."""
    placements: dict[AppKey, dict[str, Any]] = field(default_factory=dict)
    """Where each app runs and why (:func:`pincompile.contract.placements`)."""


def revisions_of(resources: dict[AppKey, Obj]) -> dict[AppKey, str]:
    """:attr:`Decided.revisions` from the apps' resources on the host."""
    from reconciler import host

    return {app: revision for app, cr in resources.items()
            if (revision := host.observed_revision(cr)) is not None}


def documents(members: dict[str, MemberState], stored: dict[AppKey, dict[str, Any]],
              revision: str, decided: Decided, now: datetime) -> dict[AppKey, dict[str, Any]]:
    """Every app's status document (``now``: the instant scheduled floors are read at;
    ``revision``: the pass's, for an app without its own in ``decided.revisions``)."""
    views, written = _views(members)
    hpas = hpas_by_app(members)
    out: dict[AppKey, dict[str, Any]] = {}
    for app in sorted(views):
        plan = decided.rollouts.get(app)
        doc = document.app_status(
            views[app], revision=decided.revisions.get(app, revision),
            rollout=plan.state.to_json() if plan else None,
            previous=stored.get(app), applied=app in written)
        if app in decided.floor_totals:
            count_floor_total(doc, decided.floor_totals[app])
        if app[0] == "PinScaler":
            doc.update(floor_status(hpas.get(app, []), now))
            seen = replicas_seen(hpas.get(app, []), stored.get(app))
            if seen:
                doc["clusterReplicas"] = seen
            if app in decided.rebalanced:
                doc["rebalance"] = decided.rebalanced[app]
        move = decided.moves.get(app)
        if move is not None:
            doc["failover"] = move.to_json()
            doc["message"] = "; ".join(m for m in (move.message, doc["message"]) if m)
        if app in decided.placements:
            doc["placement"] = decided.placements[app]
        if doc.get("history"):  # the phase as the steps above left it
            doc["history"][0]["result"] = doc["phase"]
        out[app] = doc
    return out


def write(conn: ClusterAccess, docs: dict[AppKey, dict[str, Any]],
          stored: dict[AppKey, dict[str, Any]], revision: str,
          moves: dict[AppKey, AppMove], log: EventLog | None = None) -> str | None:
    """Write each changed document (one status write per app) and the Event of each app
    that moved between clusters to the host, as many at once as the host takes (one by one,
    a first pass waits for every round trip in turn); returns the error that stopped it, if
    one did (no app is started after it). ``log``: repeated Events are counted on the last
    (:mod:`reconciler.status.events`)."""
    from reconciler import host

    changed = {app for app, doc in docs.items()
               if document.changed(stored.get(app), doc)}

    def moved(app: AppKey) -> bool:
        move = moves.get(app)
        return move is not None and (stored.get(app) or {}).get("failover") \
            != docs[app]["failover"]

    def one(app: AppKey) -> None:
        if app in changed:
            host.write_status(conn, app, docs[app])
        move = moves.get(app)
        if move is not None and moved(app):
            host.record_event(conn, app, move.phase, move.message,
                              warning=move.phase != "FailingBack", log=log)

    # only apps with something to write go to the threads (a no-op pass handed every app
    # to them, one future each, to write nothing)
    return _each(conn, [app for app in sorted(docs) if app in changed or moved(app)], one)


def write_events(conn: ClusterAccess, members: dict[str, MemberState], revision: str,
                 log: EventLog | None = None) -> str | None:
    """The Events of what this pass wrote to the members, one per app and kind of write
    (:func:`events`), as many at once as the host takes; returns the error that stopped
    it, if one did. ``log``: repeated Events are counted on the last."""
    from reconciler import host

    writes = pending_by_app(members)

    def one(app: AppKey) -> None:
        for reason, text in events(writes[app], revision):
            host.record_event(conn, app, reason, text, log=log)

    return _each(conn, sorted(writes), one)


def _each(conn: ClusterAccess, apps: list[AppKey], one: Callable[[AppKey], None]
          ) -> str | None:
    """``one(app)`` for each app, in threads; the first cluster error (then no app is
    started after it)."""
    failed: list[str] = []

    def guarded(app: AppKey) -> None:
        if failed:
            return
        try:
            one(app)
        except CLUSTER_ERRORS as exc:
            failed.append(explain(exc))

    if apps:
        with ThreadPoolExecutor(max_workers=pace.threads(conn, len(apps))) as pool:
            list(pool.map(guarded, apps))
    return failed[0] if failed else None


def _views(members: dict[str, MemberState]
           ) -> tuple[dict[AppKey, list[document.ClusterView]], set[AppKey]]:
    """Each app's objects per member with their live state; and the apps this pass wrote."""
    views: dict[AppKey, list[document.ClusterView]] = defaultdict(list)
    written: set[AppKey] = set()
    for member in members.values():
        per_app: dict[AppKey, document.ClusterView] = {}
        problems = unapplied(member)
        for obj in member.desired:
            app = document.app_of(obj)
            if app is None:
                continue
            view = per_app.setdefault(
                app, document.ClusterView(member.name, error=member.error))
            key = key_of(obj)
            ref = ObjectRef(member.name, obj["apiVersion"], obj["kind"], key[1] or None, key[2])
            view.objects.append((ref, member.live.get(key)))
            if key in problems:
                view.problems[ref] = problems[key]
        for app, view in per_app.items():
            views[app].append(view)
        if member.plan is not None:
            for change in member.plan.pending:
                app = document.app_of(change.desired or change.live or {})
                if app is not None:
                    written.add(app)
    return views, written


def unapplied(member: MemberState) -> dict[Key, Health]:
    """The objects of a member its plan could not apply, with the health they show."""
    if member.plan is None:
        return {}
    out: dict[Key, Health] = {}
    for change in member.plan.of(Action.CONFLICT, Action.INVALID):
        left = Left.CONFLICT if change.action is Action.CONFLICT else Left.REJECTED
        out[change.key] = Health(Phase.DEGRADED, f"{left}: {change.reason}")
    return out


def count_floor_total(doc: dict[str, Any], total: int) -> None:
    """Count an app's status against the replicas the floors hold for it in all."""
    if doc.get("replicas", 0) >= total:
        return
    ready = int(doc.get("readyReplicas", 0))
    doc["replicas"], doc["ready"] = total, f"{ready}/{total}"
    if ready >= total or doc.get("phase") != str(Phase.HEALTHY):
        return
    doc["phase"] = str(Phase.PROGRESSING)
    doc["message"] = (f"{ready} of its {total} replicas ready: the other clusters take over "
                      "a lost cluster's")
    for condition in doc.get("conditions") or []:
        if condition.get("type") == "Ready":
            condition.update(status="False", reason=doc["phase"], message=doc["message"])


def pending_by_app(members: dict[str, MemberState]
                   ) -> dict[AppKey, list[tuple[str, Action, str]]]:
    """The writes this pass made, by app: (cluster, action, object name), the clusters in
    name order (one walk over the plans, not one per app)."""
    out: dict[AppKey, list[tuple[str, Action, str]]] = defaultdict(list)
    for member in sorted(members.values(), key=lambda m: m.name):
        if member.plan is None:
            continue
        for change in member.plan.pending:
            app = document.app_of(change.desired or change.live or {})
            if app is not None:
                out[app].append((member.name, change.action, change.name))
    return out


def events(writes: list[tuple[str, Action, str]], revision: str) -> list[tuple[str, str]]:
    """One (reason, message) per kind of write this pass made for an app (its
    :func:`pending_by_app` entry)."""
    by_reason: dict[str, list[str]] = defaultdict(list)
    for cluster, action, name in writes:
        by_reason[EVENT_REASONS[action]].append(f"{cluster}: {action} {name}")
    out = []
    for reason, lines in sorted(by_reason.items()):
        more = f" (+{len(lines) - 8} more)" if len(lines) > 8 else ""
        out.append((reason, f"revision {revision}: " + "; ".join(lines[:8]) + more))
    return out
