"""Expansion: every spec, in every cluster the plan chose, becomes native Kubernetes objects.

One module per kind (``pinpod``, ``app``, ``scaler``, ``jobset``, ``training``, ``cronjob``,
``daemon``); ``pod`` builds every pod; ``platform`` adds what the platform needs in each
cluster (PriorityClasses, Namespaces, ResourceQuotas, sidecar DaemonSets). Workloads the
plan did not place are skipped (their problems are reported by the stages that found them);
problems found here are diagnostics located in the specs, never exceptions.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from pincompile.catalog import Catalog, Entry
from pincompile.diagnostics import Diagnostic
from pincompile.expand import app, cronjob, daemon, jobset, pinpod, platform, scaler, training
from pincompile.expand.context import Expansion, Obj, WorkloadTarget
from pincompile.manifest import Manifest
from pincompile.models import PinScaler, Resource, Workload
from pincompile.placement import Plan
from pincompile.placement.model import Key

Expander = Callable[[WorkloadTarget[Any]], list[Obj]]

EXPANDERS: dict[str, Expander] = {
    "PinPod": pinpod.expand,
    "PinApp": app.expand,
    "PinterestService": app.expand,
    "PinScaler": scaler.expand,
    "PinterestJobSet": jobset.expand,
    "PinterestTrainingJob": training.expand,
    "PinterestCronJob": cronjob.expand,
    "PinterestDaemon": daemon.expand,
}


def expand_all(catalog: Catalog, plan: Plan | None, *, revision: str
               ) -> tuple[list[Manifest], list[Diagnostic]]:
    """Every object for every cluster, sorted by output path; and the problems found."""
    if plan is None:
        return [], []
    generated, diagnostics = expand_part(catalog, plan, revision=revision)
    ordered = sorted(generated, key=lambda m: (m.relpath, _order(m.source)))
    rows = [(m.relpath, m.kind, m.name, m.cluster, _key(m.source)) for m in ordered]
    entries = {(e.file, e.doc.index): e for e in catalog.entries}
    diagnostics.extend(d for d in find_duplicates(rows, entries) if d not in diagnostics)
    manifests: dict[str, Manifest] = {}
    for m in ordered:
        manifests.setdefault(m.relpath, m)
    return list(manifests.values()), diagnostics


CHUNK = 50
"""Workloads in one chunk of :func:`expand_part` (how long a chunk takes: bench/RESULTS.md,
"Tuning")."""


def expand_part(catalog: Catalog, plan: Plan, *, revision: str,
                chunks: Iterable[int] | None = None
                ) -> tuple[Iterator[Manifest], list[Diagnostic]]:
    """The objects of the placed workloads (each with its scalers), in every cluster of
    their placement, and the platform's objects: generated one workload at a time,
    unsorted, not checked for duplicates (see :func:`find_duplicates`). The list of
    problems fills as the objects are generated.

    ``chunks``: only these; chunk 0 is the platform's objects, chunk ``c`` > 0 the
    :data:`CHUNK` workloads from the ``(c - 1) * CHUNK``-th on (in canonical order). The
    generator takes the next chunk only when it has generated the last one's objects and
    stops at the first chunk past the end, so processes drawing chunks from one shared
    counter split the work evenly however long each takes. None: every chunk."""
    run = Expansion(catalog, plan, revision)
    return _generate(run, itertools.count() if chunks is None else chunks), run.diagnostics


def _generate(run: Expansion, chunks: Iterable[int]) -> Iterator[Manifest]:
    workloads = list(run.workloads.items())
    scalers: dict[Key, list[Entry[PinScaler]]] = {}
    for scaler_entry in run.scalers.values():
        scaled = run.scaled(scaler_entry.resource)
        if scaled is not None:
            scalers.setdefault(scaled.resource.key, []).append(scaler_entry)
    for chunk in chunks:
        if chunk == 0:
            for c, o, e in platform.expand(run):
                yield Manifest(c, o, e)
            continue
        start = (chunk - 1) * CHUNK
        if start >= len(workloads):
            return
        for target in _targets(run, workloads[start:start + CHUNK], scalers):
            try:
                objs = EXPANDERS[target.kind](target)
            except Exception as exc:  # a bug must not take the whole compile down silently
                run.report(target.entry.doc.start.error(
                    "internal", f"cannot expand {target.kind} '{target.name}' for cluster "
                    f"{target.cluster_name}: {type(exc).__name__}: {exc}",
                    "this is a pincompile bug; please report it"))
                continue
            for o in objs:
                yield Manifest(target.cluster_name, o, target.entry)


def _targets(run: Expansion, workloads: list[tuple[Key, Entry[Workload]]],
             scalers: dict[Key, list[Entry[PinScaler]]]) -> Iterator[WorkloadTarget[Any]]:
    """Each placed workload of ``workloads`` and its scalers, in each of its clusters (a
    scaler goes where its target runs)."""
    for key, entry in workloads:
        decision = run.plan.decision(key)
        if decision is None:
            continue
        tier = entry.resource.spec.tier
        for unit in (entry, *scalers.get(key, ())):
            project = unit.resource.project
            for shard in decision.shards:
                cluster = run.clusters.get(shard.cluster)
                if cluster is not None:
                    yield WorkloadTarget(run, unit, cluster, project, run.namespace_of(project),
                                         tier, shard, decision)


DuplicateRow = tuple[str, str, str, str, "tuple[str, int] | None"]
"""(output path, kind, name, cluster, source spec as (file, document index))."""


def find_duplicates(rows: Sequence[DuplicateRow],
                    entries: Mapping[tuple[str, int], Entry[Any]]) -> list[Diagnostic]:
    """Two specs generating the same object: an error at the second (``rows`` sorted by
    path, then by source file and document; ``entries``: the catalog's by those)."""
    found: list[Diagnostic] = []
    first: dict[str, DuplicateRow] = {}
    for row in rows:
        path, kind, name, cluster, source = row
        held = first.setdefault(path, row)
        entry = entries.get(source) if source is not None else None
        if held is row or entry is None:
            continue
        other = entries.get(held[4]) if held[4] is not None else None
        where = f" ({other.file}:{other.doc.line})" if other is not None else ""
        found.append(entry.at("metadata", "name").error(
            "duplicate-object",
            f"{kind} '{name}' in cluster {cluster} is also generated by "
            f"{_describe(other)}{where}", "rename one of them"))
    return found


def _key(entry: Entry[Any] | None) -> tuple[str, int] | None:
    return (entry.file, entry.doc.index) if entry is not None else None


def _order(entry: Entry[Resource] | None) -> tuple[str, int]:
    return (entry.file, entry.doc.index) if entry is not None else ("", 0)


def _describe(entry: Entry[Resource] | None) -> str:
    if entry is None:
        return "the platform"
    r = entry.resource
    return f"{r.kind} '{r.name}'"


__all__ = ["CHUNK", "EXPANDERS", "expand_all", "expand_part", "find_duplicates"]
