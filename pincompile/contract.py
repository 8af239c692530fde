"""The compiler's contract with the reconciler: everything ``reconciler/`` needs from
``pincompile``, and nothing else (``tests/reconciler/test_contract.py`` holds every
reconciler module but the command line's to it).

A pass reads a compile :class:`Result` (its manifests, its catalog of specs, its placement
plan and :attr:`Result.revision`); during failover it asks for the placement without the
lost clusters (:func:`place_without`); rebalancing asks how many of a scaled app's pods
a cluster's capacity holds (:func:`pods_held`). The labels and annotations both sides read
are named in :mod:`pincompile.manifest`; the host stores every spec as a custom resource
(:mod:`pincompile.crds`). ``serve`` fetches and compiles revisions (:class:`Compiler`,
:mod:`gitsource <pincompile.source.gitsource>`); the API filters apps by label selector
(:func:`parse_selector`). The local fleet reads its ``kind: Cluster`` specs as the compiler
does (:func:`read_clusters`); the insight views read Kubernetes quantities as it does
(:func:`parse_quantity`, :func:`format_quantity`). ``serve``'s canary compiles its probe
against a revision (:func:`compile_probe`) under the platform's settings
(:func:`verification`: the canary's policy and the SLOs). What the reconciler can make
again (the local fleet, ``serve``'s default insight store) goes in the compiler's cache
folder (:func:`cache_root`, :func:`local_fleet_dir`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pincompile import crds
from pincompile.appref import AppRef, AppRefError, parse_app_ref
from pincompile.cachedir import cache_root, local_fleet_dir, local_fleet_kubeconfig
from pincompile.catalog import Catalog, Entry
from pincompile.compiler import Compiler, compile_path
from pincompile.diagnostics import Diagnostic
from pincompile.emit.output import to_yaml
from pincompile.manifest import (
    ANNOTATION_FAILOVER,
    ANNOTATION_REVISION,
    ANNOTATION_SCALE_SCHEDULES,
    ANNOTATION_SOURCE,
    LABEL_APP,
    LABEL_KIND,
    LABEL_PROJECT,
    LABEL_TIER,
    MANAGED_BY,
    MANAGED_BY_VALUE,
    Manifest,
)
from pincompile.models import KINDS, TIERS, WORKLOAD_KINDS, Cluster
from pincompile.models.nodes import NodeSignal, RemediationPolicy, RotationPolicy
from pincompile.models.types import duration_seconds, format_quantity, parse_quantity
from pincompile.pipeline import Result
from pincompile.probe import PROBE_CONTAINER, READY_LINE, CompiledProbe, compile_probe
from pincompile.repoconfig import verification
from pincompile.selector import MAX_LENGTH as MAX_SELECTOR_LENGTH
from pincompile.selector import Labels, SelectorError, parse_selector
from pincompile.source import gitsource
from pincompile.source.gitsource import GitError, SpecRoot
from pincompile.verification import (
    DEFAULT_SLOS,
    LATENCY_BUCKETS,
    PUSH_BUCKETS,
    ROUTE_GROUPS,
    CanaryPolicy,
    Objective,
    Verification,
)

__all__ = [
    "ANNOTATION_FAILOVER",
    "ANNOTATION_REVISION",
    "ANNOTATION_SCALE_SCHEDULES",
    "ANNOTATION_SOURCE",
    "DEFAULT_SLOS",
    "KINDS",
    "LABEL_APP",
    "LABEL_KIND",
    "LABEL_PROJECT",
    "LABEL_TIER",
    "LATENCY_BUCKETS",
    "MANAGED_BY",
    "MANAGED_BY_VALUE",
    "MAX_SELECTOR_LENGTH",
    "PROBE_CONTAINER",
    "PUSH_BUCKETS",
    "READY_LINE",
    "ROUTE_GROUPS",
    "TIERS",
    "WORKLOAD_KINDS",
    "AppRef",
    "AppRefError",
    "CanaryPolicy",
    "Catalog",
    "Cluster",
    "CompiledProbe",
    "Compiler",
    "Diagnostic",
    "Entry",
    "GitError",
    "Labels",
    "Manifest",
    "NodeSignal",
    "Objective",
    "Placed",
    "RemediationPolicy",
    "Result",
    "RotationPolicy",
    "SelectorError",
    "SpecRoot",
    "Verification",
    "cache_root",
    "compile_path",
    "compile_probe",
    "crds",
    "duration_seconds",
    "format_quantity",
    "gitsource",
    "local_fleet_dir",
    "local_fleet_kubeconfig",
    "parse_app_ref",
    "parse_quantity",
    "parse_selector",
    "place_without",
    "placements",
    "pods_held",
    "read_clusters",
    "to_yaml",
    "verification",
]


@dataclass
class Placed:
    """The fleet placed and expanded again without some clusters."""

    plan: Any
    """The placement :class:`~pincompile.placement.Plan`."""
    manifests: list[Manifest] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What could not be placed or expanded, for people (sorted, each once)."""


def place_without(result: Result, lost: Mapping[str, str], *, expand: bool = True,
                  only: Collection[tuple[str, str, str]] | None = None) -> Placed:
    """``result``'s specs placed and expanded as if the ``lost`` clusters (name → why) were
    cordoned, at the same revision. ``expand=False`` places only (no manifests);
    ``only`` places just those workloads (keys), as the zone-loss simulation does."""
    from pincompile.expand import expand_all
    from pincompile.placement import plan as place

    plan, problems = place(result.catalog, lost=lost, only=only)
    if not expand:
        return Placed(plan, [], sorted({d.message for d in problems}))
    manifests, more = expand_all(result.catalog, plan, revision=result.revision)
    return Placed(plan, manifests, sorted({d.message for d in [*problems, *more]}))


def placements(result: Result) -> dict[tuple[str, str, str], dict[str, Any]]:
    """Where each app runs and why, as its status keeps it: the chosen clusters (zone,
    replicas), the eligible ones in preference order, why every other cluster was
    filtered out (``filtered``, absent when none was), and placement's notes. A
    PinScaler's is its target's."""
    plan = result.plan
    if plan is None:
        return {}
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for key, decision in plan.decisions.items():
        out[key] = {"clusters": [{"name": s.cluster, "zone": s.zone, "replicas": s.replicas}
                                 for s in decision.shards],
                    "eligible": list(decision.order or decision.eligible),
                    "notes": list(decision.notes)}
        if decision.filtered:  # an empty map would reach the host as null (server-side apply)
            out[key]["filtered"] = dict(sorted(decision.filtered.items()))
    for scaler, target in plan.scaler_targets.items():
        if target in out:
            out[scaler] = out[target]
    return out


def pods_held(result: Result, scaler: Any, cluster: str) -> int | None:
    """Pods of the app PinScaler ``scaler`` (its key) scales that ``cluster``'s capacity
    for the app's tier holds, as placement counts them (None: not limited, or not
    placed)."""
    from pincompile.placement.context import pods_fit, pool_capacity, whole

    plan = result.plan
    target = plan.scaler_targets.get(scaler) if plan is not None else None
    decision = plan.decision(target) if target else None
    entry = result.catalog.clusters.get(cluster)
    if decision is None or entry is None:
        return None
    fit = pods_fit(pool_capacity(entry.resource, decision.tier), decision.pod_requests)
    return None if fit is None else whole(fit)


def read_clusters(root: Path) -> tuple[list[Entry[Cluster]], list[Diagnostic]]:
    """The ``kind: Cluster`` specs in the YAML files under ``root`` (a folder, or one file),
    read, validated and defaulted as a compile reads them, in load order; and what is wrong
    with them, located (file names relative to ``root``; a file's own name when it is
    one). Other kinds are not read."""
    from pincompile.parse import parse_document
    from pincompile.source.loader import load_tree

    loaded = load_tree(root)
    clusters: list[Entry[Cluster]] = []
    problems = list(loaded.diagnostics)
    for doc in loaded.documents:
        if doc.kind != Cluster.KIND:
            continue
        entry, found = parse_document(doc)
        problems.extend(found)
        if entry is not None:
            clusters.append(entry)
    return clusters, problems
