"""The member clusters' Events the insight store keeps, and the app each one is of.

One watch of Events per member cluster (the Events of namespaced objects), holding only
those of the kinds an app is made of (:data:`KEPT_KINDS`: its Deployment scaling, its
ReplicaSets creating pods, its HPA rescaling, its Job completing, its pods scheduled, ...)
and only the fields a record needs (:func:`lean_event`).

An Event finds its app by its object's app labels (:func:`reconciler.status.document.app_of`):
a pod's, and its owner's (the ReplicaSet, Job or DaemonSet that made it), from the watch of
the apps' pods; any other object's (a Deployment, an HPA, a CronJob) by one GET of it,
a few a second per cluster at most, in a thread of their own. Each object's app is
remembered while an Event names it, so a deleted pod's last Events still find their app
and memory follows the Events the API server holds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor, Future
from typing import Any

from kubernetes.dynamic.exceptions import (
    ForbiddenError,
    NotFoundError,
    ResourceNotFoundError,
)

from reconciler.clients import read
from reconciler.clients.access import ClusterAccess
from reconciler.clients.connect import TokenBucket
from reconciler.errors import CLUSTER_ERRORS, explain
from reconciler.kinds import MANAGED_KINDS, KindInfo
from reconciler.model import AppKey, Obj
from reconciler.status.document import app_of

log = logging.getLogger("pincompile.api.events")

EVENT = KindInfo("v1", "Event")
NAMESPACED_OBJECTS = "involvedObject.namespace!="
"""The watch's field selector: Events of namespaced objects (no Node's, no Namespace's)."""
KEPT_KINDS = frozenset({k.kind for k in MANAGED_KINDS if k.namespaced} | {"ReplicaSet"})
"""The kinds whose Events are kept: every namespaced kind pincompile applies, and the
ReplicaSets its Deployments make (CronJobs' Jobs and every controller's pods are kinds it
applies too)."""
_EVENT_FIELDS = ("reason", "message", "note", "type", "count", "series", "firstTimestamp",
                 "lastTimestamp", "eventTime")
_REF_FIELDS = ("apiVersion", "kind", "namespace", "name", "uid")

ObjectRef = tuple[str, str, str]
"""(kind, namespace, name) of an object an Event is about."""
Lookup = Callable[[Mapping[str, Any]], AppKey | None]
"""The app of an Event's ``involvedObject``, read from the cluster (None: not an app's, or
gone); raises one of ``CLUSTER_ERRORS`` when the cluster cannot say now."""


def lean_event(event: Obj) -> Obj | None:
    """What the store reads of a member Event (its managed fields, source and reporting
    fields left out), or None for an Event of a kind no app is made of."""
    involved = event.get("involvedObject") or {}
    if involved.get("kind") not in KEPT_KINDS:
        return None
    meta = event.get("metadata") or {}
    return {"apiVersion": event.get("apiVersion"), "kind": event.get("kind"),
            "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "creationTimestamp")
                         if k in meta},
            "involvedObject": {k: involved[k] for k in _REF_FIELDS if k in involved},
            **{k: event[k] for k in _EVENT_FIELDS if k in event}}


def ref_of(involved: Mapping[str, Any]) -> ObjectRef:
    return (str(involved.get("kind") or ""), str(involved.get("namespace") or ""),
            str(involved.get("name") or ""))


def pods_objects(pods: Iterable[Obj]) -> dict[ObjectRef, AppKey]:
    """The app of each pod that carries an app's labels, and of each pod's owner."""
    found: dict[ObjectRef, AppKey] = {}
    for pod in pods:
        app = app_of(pod)
        if app is None:
            continue
        meta = pod.get("metadata") or {}
        namespace = str(meta.get("namespace") or "")
        found[("Pod", namespace, str(meta.get("name") or ""))] = app
        for owner in meta.get("ownerReferences") or []:
            found[(str(owner.get("kind") or ""), namespace, str(owner.get("name") or ""))] = app
    return found


class ObjectApps:
    """The app of each object one cluster's Events name: from its pods, else looked up by
    ``lookup`` in ``pool`` (so a slow cluster never holds up the caller): at most ``qps``
    a second, with bursts of ``burst`` and as many at once, its answer there for a later
    call. A pod no pod watch holds is no app's, or not seen yet, and is not looked up."""

    def __init__(self, lookup: Lookup, pool: Executor, qps: float, burst: int) -> None:
        self.lookup, self.pool, self.burst = lookup, pool, burst
        self.known: dict[ObjectRef, AppKey | None] = {}
        self.pending: dict[ObjectRef, Future[AppKey | None]] = {}
        self.bucket = TokenBucket(qps, burst)

    def of(self, pods: Iterable[Obj], events: Sequence[Obj]) -> list[tuple[Obj, AppKey]]:
        """Each of ``events`` whose object is an app's, with that app."""
        named: dict[ObjectRef, Mapping[str, Any]] = {}
        for event in events:
            involved = event.get("involvedObject") or {}
            named.setdefault(ref_of(involved), involved)
        known = {ref: app for ref, app in self.known.items() if ref in named}
        known |= {ref: app for ref, app in pods_objects(pods).items() if ref in named}
        for ref, answer in self._answers().items():
            if ref in named:
                known.setdefault(ref, answer)
        for ref, involved in named.items():
            if ref in known or ref in self.pending or ref[0] == "Pod":
                continue
            if len(self.pending) >= self.burst or self.bucket.try_take() > 0:
                break  # the rest waits for a later call
            self.pending[ref] = self.pool.submit(self.lookup, involved)
        self.known = known
        return [(event, app) for event in events
                if (app := known.get(ref_of(event.get("involvedObject") or {}))) is not None]

    def _answers(self) -> dict[ObjectRef, AppKey | None]:
        """The lookups done since the last call (one that failed is asked again later)."""
        answers: dict[ObjectRef, AppKey | None] = {}
        for ref, future in list(self.pending.items()):
            if not future.done():
                continue
            del self.pending[ref]
            try:
                answers[ref] = future.result()
            except CLUSTER_ERRORS as exc:
                log.debug("the app of %s: %s", "/".join(ref), explain(exc))
            except Exception:  # a bug: say so, and go on collecting
                log.exception("the app of %s", "/".join(ref))
        return answers


def looked_up(conn: ClusterAccess, involved: Mapping[str, Any]) -> AppKey | None:
    """The app of the object an Event names, by a GET of it (see :data:`Lookup`)."""
    try:
        live = read.get(conn, {"apiVersion": involved.get("apiVersion") or "v1",
                               "kind": involved.get("kind"),
                               "metadata": {"name": involved.get("name"),
                                            "namespace": involved.get("namespace")}})
    except (NotFoundError, ResourceNotFoundError):
        return None  # gone, or a kind this cluster does not serve
    except ForbiddenError as exc:
        log.warning("%s: the app of %s/%s/%s cannot be read: %s", conn.name,
                    involved.get("kind"), involved.get("namespace"), involved.get("name"),
                    explain(exc))
        return None
    return None if live is None else app_of(live)
