"""One status per app: its objects' health in every member cluster, folded into the
document the host cluster stores in the app's ``status`` (and ``pincompile status`` shows).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pincompile.contract import WORKLOAD_KINDS
from pincompile.manifest import LABEL_APP, LABEL_KIND, LABEL_PROJECT
from reconciler.clock import iso_time
from reconciler.health import aggregate, assess
from reconciler.model import AppKey, Health, Obj, ObjectRef, Phase

#: Kinds that get a status: every workload kind, and PinScaler.
APP_KINDS = frozenset({*WORKLOAD_KINDS, "PinScaler"})
#: Kinds whose pods an app's ready/desired counts come from.
PRIMARY = ("Deployment", "StatefulSet", "DaemonSet", "Job", "Pod", "CronJob", "TFJob",
           "PyTorchJob")
HISTORY_LIMIT = 10
"""Revisions kept in an app's ``status.history`` (as Argo CD's ``revisionHistoryLimit``)."""


def app_of(obj: Obj) -> AppKey | None:
    """(kind, project, name) of the workload (or PinScaler) an object was compiled from;
    None for platform objects (namespaces, quotas, sidecar daemons)."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    if labels.get(LABEL_KIND) in APP_KINDS and LABEL_APP in labels:
        return (labels[LABEL_KIND], labels.get(LABEL_PROJECT, ""), labels[LABEL_APP])
    return None


def counts(obj: Obj) -> tuple[int, int]:
    """(ready, desired) pods of a workload object."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    kind = obj.get("kind")
    if kind in ("Deployment", "StatefulSet"):
        return int(status.get("readyReplicas", 0)), int(spec.get("replicas", 1))
    if kind == "DaemonSet":
        return int(status.get("numberReady", 0)), int(status.get("desiredNumberScheduled", 0))
    if kind == "Job":
        want = spec.get("completions")
        return int(status.get("succeeded", 0)), int(want if want is not None else 1)
    if kind == "Pod":
        ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                    for c in status.get("conditions") or [])
        return (1 if ready or status.get("phase") == "Succeeded" else 0), 1
    return 0, 0


@dataclass
class ClusterView:
    """An app in one cluster: its live objects, or why they could not be read."""

    cluster: str
    objects: list[tuple[ObjectRef, Obj | None]] = field(default_factory=list)
    error: str | None = None
    problems: dict[ObjectRef, Health] = field(default_factory=dict)
    """Objects the pass could not apply (a conflict, a rejection): their health instead
    of their live state's (which is not ours, or absent)."""


def cluster_status(view: ClusterView, revision: str) -> dict[str, Any]:
    """One entry of ``status.clusters``."""
    if view.error is not None:
        return {"name": view.cluster, "phase": str(Phase.UNKNOWN),
                "message": f"cluster unreachable: {view.error}"}
    health = aggregate((ref, view.problems.get(ref) or assess(obj)) for ref, obj in view.objects)
    ready = desired = 0
    for _, obj in view.objects:
        if obj is not None and obj.get("kind") in PRIMARY:
            r, d = counts(obj)
            ready, desired = ready + r, desired + d
    entry: dict[str, Any] = {"name": view.cluster, "phase": str(health.phase),
                             "replicas": desired, "readyReplicas": ready,
                             "observedRevision": revision}
    if health.message:
        entry["message"] = health.message
    return entry


def app_status(views: Iterable[ClusterView], *, revision: str,
               rollout: Mapping[str, Any] | None, previous: Mapping[str, Any] | None,
               applied: bool, now: float | None = None) -> dict[str, Any]:
    """The whole ``status`` of one app. ``applied``: this pass wrote something for it."""
    clusters = [cluster_status(v, revision) for v in sorted(views, key=lambda v: v.cluster)]
    # each cluster's message already says where ("Deployment/shop/web in rt-a: ...")
    health = aggregate(Health(Phase(c["phase"]), c.get("message", "")) for c in clusters)
    if rollout and rollout.get("phase") == "Halted":
        health = Health(Phase.DEGRADED, f"rollout halted: {rollout.get('message', '')}")
    elif rollout and rollout.get("pausedBy") and health.phase is Phase.HEALTHY:
        health = Health(Phase.PROGRESSING, f"rollout {rollout.get('message', '')}")
    ready = sum(c.get("readyReplicas", 0) for c in clusters)
    desired = sum(c.get("replicas", 0) for c in clusters)
    previous = previous or {}
    stamp = iso_time(now if now is not None else time.time())
    status: dict[str, Any] = {
        "phase": str(health.phase), "ready": f"{ready}/{desired}",
        "replicas": desired, "readyReplicas": ready, "observedRevision": revision,
        "message": health.message, "clusters": clusters,
        "lastAppliedRevision": revision if applied else previous.get(
            "lastAppliedRevision", revision),
        "lastAppliedTime": stamp if applied else previous.get("lastAppliedTime", stamp),
    }
    if rollout:
        status["rollout"] = dict(rollout)
    status["history"] = history(previous.get("history"), revision, str(health.phase), stamp)
    healthy = health.phase in (Phase.HEALTHY, Phase.COMPLETED, Phase.SUSPENDED)
    old = {c.get("type"): c for c in previous.get("conditions") or []}.get("Ready") or {}
    state = "True" if healthy else "False"
    status["conditions"] = [{
        "type": "Ready", "status": state, "reason": str(health.phase),
        "message": health.message or "every object is healthy",
        "lastTransitionTime": old.get("lastTransitionTime", stamp)
        if old.get("status") == state else stamp,
    }]
    return status


def history(kept: Any, revision: str, phase: str, stamp: str) -> list[dict[str, Any]]:
    """An app's ``status.history``, newest first: a revision not seen last is added
    (applied at ``stamp``), the newest one's ``result`` follows the app's phase while it is
    the current one (so a revision replaced keeps the phase it ended with); at most
    :data:`HISTORY_LIMIT` entries."""
    entries = [dict(e) for e in kept if isinstance(e, Mapping) and e.get("revision")] \
        if isinstance(kept, list) else []
    if not revision:
        return entries[:HISTORY_LIMIT]
    if entries and entries[0]["revision"] == revision:
        entries[0]["result"] = phase
    else:
        entries.insert(0, {"revision": revision, "appliedAt": stamp, "result": phase})
    return entries[:HISTORY_LIMIT]


def changed(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
    """Whether a status differs in anything but its timestamps."""
    def strip(s: Mapping[str, Any] | None) -> Any:
        s = dict(s or {})
        s.pop("lastAppliedTime", None)
        s["conditions"] = [{k: v for k, v in c.items() if k != "lastTransitionTime"}
                           for c in s.get("conditions") or []]
        return s
    return bool(strip(old) != strip(new))
