"""Each member cluster's desired objects for a pass: the compile result divided per
cluster, HPA floors at their scheduled value, and the helpers every step uses to find an
app's objects across the members (pure: no cluster I/O)."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pincompile.contract import Manifest, Result
from reconciler.clients.access import ClusterAccess
from reconciler.clients.read import Key, key_of
from reconciler.model import AppKey, ClusterReport, Obj
from reconciler.plan import applied
from reconciler.plan.cluster_plan import ClusterPlan
from reconciler.scaling import ScheduleError, with_scheduled_floor
from reconciler.status import document

Echo = Callable[[str], None]


@dataclass
class MemberState:
    """One member cluster during a pass."""

    name: str
    context: str
    zone: str
    desired: list[Obj] = field(default_factory=list)
    initial_replicas: dict[Key, int] = field(default_factory=dict)
    """Autoscaled workloads: their share of the app's replicas here (set at creation)."""
    conn: ClusterAccess | None = None
    live: dict[Key, Obj] = field(default_factory=dict)
    plan: ClusterPlan | None = None
    report: ClusterReport | None = None
    error: str | None = None


def members(result: Result, only: Collection[str] | None, now: datetime,
            echo: Echo) -> dict[str, MemberState]:
    """Every member cluster of the result (or those in ``only``) with its desired objects,
    HPA floors evaluated at ``now``."""
    by_cluster: dict[str, list[Manifest]] = defaultdict(list)
    for manifest in result.manifests:
        by_cluster[manifest.cluster].append(manifest)
    out: dict[str, MemberState] = {}
    for name, entry in sorted(result.catalog.clusters.items()):
        if only is not None and name not in only:
            continue
        spec = entry.resource
        desired = [with_floor(m.obj, now, echo) for m in by_cluster.get(name, [])]
        out[name] = MemberState(name, spec.context, spec.spec.zone, desired,
                                shares(result.plan, name, desired))
    return out


def app_digests(manifests: Iterable[Manifest], digests: applied.Digests | None = None
                ) -> dict[AppKey, str]:
    """A digest of each app's compiled objects in every cluster (their content without the
    revision annotation): the same at two commits exactly when the commit between them left
    the app's compiled output alone. ``digests``: the pass's, to reuse."""
    digests = digests or applied.Digests()
    parts: dict[AppKey, list[str]] = defaultdict(list)
    for manifest in manifests:
        app = document.app_of(manifest.obj)
        if app is not None:
            kind, namespace, name = key_of(manifest.obj)
            parts[app].append(f"{manifest.cluster}/{kind}/{namespace}/{name}="
                              f"{digests.of(manifest.obj)}")
    return {app: hashlib.sha256("\n".join(sorted(lines)).encode()).hexdigest()[:20]
            for app, lines in parts.items()}


def with_floor(obj: Obj, now: datetime, echo: Echo) -> Obj:
    """An HPA with ``minReplicas`` raised to its scheduled floor at ``now``."""
    if obj["kind"] != "HorizontalPodAutoscaler":
        return obj
    try:
        return with_scheduled_floor(obj, now)
    except ScheduleError as exc:
        echo(f"HorizontalPodAutoscaler/{obj['metadata']['name']}: schedules ignored: {exc}")
        return obj


def shares(plan: Any, cluster: str, desired: list[Obj]) -> dict[Key, int]:
    """Each autoscaled workload's share of its app's replicas in ``cluster`` (``plan``: a
    placement :class:`~pincompile.placement.Plan`)."""
    out: dict[Key, int] = {}
    for obj in desired:
        app = document.app_of(obj)
        decision = plan.decision(app) if app and plan else None
        if obj["kind"] != "Deployment" or decision is None:
            continue
        for shard in decision.shards:
            if shard.cluster == cluster and shard.min_replicas is not None:
                out[key_of(obj)] = shard.replicas
    return out


def by_app(members: Iterable[MemberState], wanted: Callable[[Obj, AppKey], bool]
           ) -> dict[AppKey, dict[str, tuple[int, Obj]]]:
    """The desired objects of apps that ``wanted`` picks: app -> cluster -> (index in that
    member's ``desired``, object), so a step can replace them in place."""
    out: dict[AppKey, dict[str, tuple[int, Obj]]] = defaultdict(dict)
    for member in members:
        for index, obj in enumerate(member.desired):
            app = document.app_of(obj)
            if app and wanted(obj, app):
                out[app][member.name] = (index, obj)
    return out


def int_or_none(value: Any) -> int | None:
    """``value`` when it is an int (not a bool), else None (stored status is hostile)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def target_key(hpa: Obj) -> Key:
    """The Deployment an HPA scales."""
    return ("Deployment", str(hpa["metadata"].get("namespace") or ""),
            str(hpa["spec"]["scaleTargetRef"]["name"]))


def target_replicas(member: MemberState, hpa: Obj) -> int | None:
    """``spec.replicas`` of the live Deployment ``hpa`` scales in ``member`` (None: none)."""
    live = member.live.get(target_key(hpa))
    replicas = (live or {}).get("spec", {}).get("replicas") if live else None
    return int_or_none(replicas)
