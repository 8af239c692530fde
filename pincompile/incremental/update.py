"""An incremental compile: a changed tree compiled against a snapshot, or None when an
edit could reach beyond the changed apps."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pincompile.catalog import Catalog, Entry, note_invalid
from pincompile.diagnostics import Diagnostic, add_new
from pincompile.emit.output import PLACEMENT_FILE, manifest_path, serialize
from pincompile.emit.signature import digest, tree_sig
from pincompile.incremental.fragments import (
    fragment,
    fragments_of,
    placement_text,
    splice_placement,
)
from pincompile.incremental.snapshots import (
    Delta,
    FileSummary,
    Invalid,
    Outcome,
    Snapshot,
    owned,
    per_cluster,
    tree_update,
    unit_of,
)
from pincompile.incremental.units import (
    Claim,
    Unit,
    app_file,
    bucket,
    bucket_sums,
    claims_of,
    link_of,
)
from pincompile.manifest import Manifest
from pincompile.placement.model import Key, Plan
from pincompile.repoconfig import CONFIG_FILE, repo_config
from pincompile.source.filecache import FileState
from pincompile.source.loader import LoadResult


@dataclass
class _Scope:
    """What an update recompiles: the changed files, the files linked to them (through
    scaler targets) and their units; ``kept``, the units left as they are."""

    now: dict[str, str]
    changed: list[str]
    removed: list[str]
    states: dict[str, FileState]
    affected: set[str] = field(default_factory=set)
    old_units: set[Key] = field(default_factory=set)
    kept: dict[Key, Unit] = field(default_factory=dict)
    new_entries: list[Entry[Any]] = field(default_factory=list)


@dataclass
class _Compiled:
    """Check, placement and expansion of the affected units."""

    plan: Plan
    manifests: list[Manifest]
    diagnostics: list[Diagnostic]
    touched: set[int]
    in_touched: dict[int, list[Unit]]


@dataclass
class _Outputs:
    """The output files an update writes and removes, and the platform's objects."""

    write: dict[str, str | bytes]
    old_paths: dict[str, bytes]
    written: set[str]
    platform: dict[str, bytes]
    platform_manifests: list[Manifest]


def update(prev: Snapshot, key: tuple[str, ...], files: list[tuple[str, str]],
           state_of: Callable[[str, str], FileState | None], walked: LoadResult, *,
           revision: str, fmt: str | None, in_memory: bool = False,
           read_placement: Callable[[], bytes | None] = lambda: None,
           placement_unchanged: bool = False) -> Outcome | Invalid | None:
    """Compile against ``prev``; :class:`Invalid` when the changed apps have errors; None
    when a full compile is needed (module docstring). ``key``: what the result is valid for
    (:func:`snapshot_key`).
    ``in_memory``: ``prev`` was made without output files (a long-running process); the
    outcome then carries every object and the plan, and nothing to write, and ``prev`` may
    be of another revision. ``fmt`` None:
    check only (``validate``): nothing is serialized or written, no ``placement.json``.

    ``files``: (name, content digest) of every file of the tree, in load order;
    ``state_of(name, digest)``: that file loaded and parsed (from memory, the cache or the
    file itself), or None; ``read_placement()``: the ``placement.json`` written last (its
    unchanged workloads' entries are kept as they are), ``placement_unchanged``: it is
    known by its stat (else its digest is checked).
    """
    # in memory, a new revision only restamps the unchanged units' objects
    restamp = (in_memory and prev.valid_for != key
               and _but_revision(prev.valid_for) == _but_revision(key))
    if (prev.valid_for != key and not restamp) or walked.diagnostics:
        return None
    scope = _changed_files(prev, files, state_of)
    if scope is None:
        return None
    if not scope.changed and not scope.removed and not restamp:
        return None if in_memory else _unchanged(prev, walked)
    if not _close_over_links(prev, scope, state_of) or not _keep_unaffected(prev, files, scope):
        return None
    compiled = _compile_affected(prev, files, scope, state_of, revision)
    if compiled is None:
        return None
    if compiled.diagnostics:
        return _invalid(prev, compiled.diagnostics, scope.states, scope.affected,
                        compiled.manifests, scope.now, walked, fmt)

    units: dict[Key, Unit] = ({k: u.at_revision(revision) for k, u in scope.kept.items()}
                              if restamp else dict(scope.kept))
    fresh: dict[Key, Unit] = {}
    for name in scope.affected:
        for e, _ in scope.states[name].parsed:
            if e is None:
                continue
            fresh[e.resource.key] = units[e.resource.key] = unit_of(e.resource, name,
                                                                    compiled.plan, in_memory)
    serialized = fmt is not None and not in_memory
    outputs = _outputs(prev, scope, compiled.manifests, fresh, fmt, serialized)
    if outputs is None:
        return None
    sig = b""
    if serialized:
        placement = _placement(prev, compiled.plan, scope.old_units, fresh, read_placement,
                               placement_unchanged)
        if placement is None:
            return None
        sig = digest(placement)
        if sig != prev.placement:
            outputs.write[PLACEMENT_FILE] = placement
    snap = _next_snapshot(prev, key, files, scope, compiled, units, fresh, outputs, sig,
                          in_memory)
    outcome = Outcome(snap, outputs.write, set(outputs.old_paths) - outputs.written,
                      *_counts(snap), units=len(fresh), warnings=_warnings(snap, walked))
    if in_memory:  # a long-running process: every decision, not only the new ones
        compiled.plan.decisions = dict(sorted({k: u.decision for k, u in units.items()
                                               if u.decision is not None}.items()))
        outcome.manifests = sorted(
            [*outputs.platform_manifests,
             *(m for u in units.values() for m in (u.manifests or []))],
            key=lambda m: m.relpath)
        outcome.plan = compiled.plan
    return outcome


def _changed_files(prev: Snapshot, files: list[tuple[str, str]],
                   state_of: Callable[[str, str], FileState | None]) -> _Scope | None:
    """The files changed or removed since ``prev``, the changed ones loaded; None when one
    of them is a platform file or not an app file."""
    now = dict(files)
    changed = [n for n, d in files if n not in prev.files or prev.files[n].digest != d]
    removed = [n for n in prev.files if n not in now]
    if any(n in prev.platform for n in (*changed, *removed)):
        return None
    states: dict[str, FileState] = {}
    for name in changed:
        state = state_of(name, now[name])
        if state is None or not app_file(state, problems_allowed=True):
            return None
        states[name] = state
    return _Scope(now, changed, removed, states)


def _close_over_links(prev: Snapshot, scope: _Scope,
                      state_of: Callable[[str, str], FileState | None]) -> bool:
    """Add to ``scope`` the files linked to the changed ones through scaler targets (and
    their units); False when one of them cannot be loaded again."""
    changed_or_removed = (*scope.changed, *scope.removed)
    scope.old_units = {k for n in changed_or_removed if n in prev.files
                       for k in prev.files[n].units}
    links = {prev.units[k].link for k in scope.old_units}
    for loaded in scope.states.values():
        links.update(link_of(e.resource) for e, _ in loaded.parsed if e is not None)
    scope.affected = set(scope.states)
    todo = set(links)
    seen_links = set(links)
    while todo:  # one pass over the units per step of the links (most edits: one pass)
        linked = {u.file for k, u in prev.units.items()
                  if u.link in todo and k not in scope.old_units} - scope.affected
        todo = set()
        for name in sorted(linked):
            state = state_of(name, scope.now[name])
            if state is None:
                return False
            scope.states[name] = state
            scope.affected.add(name)
            scope.old_units.update(prev.files[name].units)
            for e, _ in state.parsed:
                if e is not None and link_of(e.resource) not in seen_links:
                    seen_links.add(link_of(e.resource))
                    todo.add(link_of(e.resource))
    return True


def _keep_unaffected(prev: Snapshot, files: list[tuple[str, str]], scope: _Scope) -> bool:
    """The units kept as they are and the affected files' entries, in ``scope``; False
    when an entry duplicates a kept unit's key or claim (a full compile reports it)."""
    scope.kept = {k: u for k, u in prev.units.items() if k not in scope.old_units}
    taken: dict[Claim, Key] = {c: k for k, u in scope.kept.items() for c in u.claims}
    for name, _ in files:
        if name in scope.affected:
            scope.new_entries.extend(e for e, _ in scope.states[name].parsed if e is not None)
    return not any(e.resource.key in scope.kept or any(c in taken for c in claims_of(e.resource))
                   for e in scope.new_entries)


def _catalog(prev: Snapshot, files: list[tuple[str, str]], scope: _Scope,
             state_of: Callable[[str, str], FileState | None]) -> Catalog | None:
    """The platform specs and the affected files' specs, in load order."""
    catalog = Catalog()
    for name, _ in files:
        if name in prev.platform:
            state = state_of(name, scope.now[name])
            if state is None:
                return None
            for entry, _ in state.parsed:
                if entry is not None:
                    catalog.add(entry)
        elif name in scope.affected:
            for entry, _ in scope.states[name].parsed:
                if entry is not None:
                    catalog.add(entry)
    return catalog


def _compile_affected(prev: Snapshot, files: list[tuple[str, str]], scope: _Scope,
                      state_of: Callable[[str, str], FileState | None],
                      revision: str) -> _Compiled | None:
    """Check, place (against the kept units' sums) and expand the affected units; None
    when the settings cannot be read again or placement has a problem."""
    from pincompile.checks import check
    from pincompile.emit.output import too_large_all
    from pincompile.expand import expand_all
    from pincompile.placement import plan as place
    from pincompile.placement.sums import Sums

    catalog = _catalog(prev, files, scope, state_of)
    if catalog is None:
        return None
    states, affected, now = scope.states, scope.affected, scope.now
    note_invalid(catalog, (d for name in affected for d in states[name].loaded.documents))
    diagnostics = [d for name in affected for d in states[name].loaded.diagnostics]
    diagnostics += [d for name in affected for _, ds in states[name].parsed for d in ds]
    config_state = state_of(CONFIG_FILE, now[CONFIG_FILE]) if CONFIG_FILE in now else None
    if CONFIG_FILE in now and config_state is None:
        return None  # the settings cannot be read again: a full compile reports why
    config, _ = repo_config(config_state.loaded.sources if config_state is not None else {})
    add_new(diagnostics, check(catalog, config))

    touched = ({bucket(k) for k in scope.old_units}
               | {bucket(e.resource.key) for e in scope.new_entries})
    in_touched: dict[int, list[Unit]] = {b: [] for b in touched}
    for k, u in scope.kept.items():
        b = bucket(k)
        if b in touched:
            in_touched[b].append(u)
    base = Sums()
    for b, sums in prev.buckets.items():
        if b not in touched:
            base.merge(sums)
    for b in sorted(touched):
        base.merge(bucket_sums(in_touched[b]))
    scalers = {k: u.scaler_target for k, u in scope.kept.items() if u.scaler_target is not None}
    plan, problems = place(catalog, base, scalers)
    if problems:
        return None
    manifests, problems = expand_all(catalog, plan, revision=revision)
    add_new(diagnostics, problems)
    add_new(diagnostics, too_large_all(manifests))
    return _Compiled(plan, manifests, diagnostics, touched, in_touched)


def _outputs(prev: Snapshot, scope: _Scope, manifests: list[Manifest],
             fresh: dict[Key, Unit], fmt: str | None, serialized: bool) -> _Outputs | None:
    """Record each object with its unit (serialized, with its digest, unless
    ``serialized`` is False); None when an object is one an unchanged unit generates."""
    write: dict[str, str | bytes] = {}
    platform: dict[str, bytes] = {}
    platform_manifests: list[Manifest] = []
    old_paths = {p: d for k in scope.old_units for p, d in prev.units[k].outputs.items()}
    old_paths.update(prev.platform_outputs)
    for m in manifests:
        path = _path(m, fmt)
        if path not in old_paths and prev.has(path):
            return None  # an object an unchanged unit generates: a full compile reports it
        text = serialize(m.obj, fmt) if serialized and fmt is not None else ""
        sig = digest(text) if serialized else b""
        if not owned(m, path, sig, fresh):
            platform[path] = sig
            platform_manifests.append(m)
        if serialized and old_paths.get(path) != sig:
            write[path] = text
    written = {p for u in fresh.values() for p in u.outputs} | set(platform)
    return _Outputs(write, old_paths, written, platform, platform_manifests)


def _placement(prev: Snapshot, plan: Plan, old_units: set[Key], fresh: dict[Key, Unit],
               read_placement: Callable[[], bytes | None],
               placement_unchanged: bool) -> bytes | None:
    """The new ``placement.json``: the one written last with the affected workloads'
    entries replaced; None when it was changed since or cannot be read back."""
    old = read_placement()
    if old is None or (not placement_unchanged and digest(old) != prev.placement):
        return None
    changed_parts = {k: fragment(plan.placed[k].decision) for k in fresh if k in plan.placed}
    placement = splice_placement(old, plan, old_units, changed_parts)
    if placement is None:  # workloads come or go: every entry read back
        fragments = fragments_of(old.decode("utf-8", "surrogateescape"))
        if fragments is None:
            return None
        for k in old_units:
            fragments.pop(k, None)
        fragments.update(changed_parts)
        placement = placement_text(plan, fragments).encode("utf-8", "surrogateescape")
    return placement


def _next_snapshot(prev: Snapshot, key: tuple[str, ...], files: list[tuple[str, str]],
                   scope: _Scope, compiled: _Compiled, units: dict[Key, Unit],
                   fresh: dict[Key, Unit], outputs: _Outputs, placement_sig: bytes,
                   in_memory: bool) -> Snapshot:
    """``prev`` with the update's files, units, outputs and sums (and, written to a
    folder, the :class:`Delta` a stored base needs to become it)."""
    affected, old_paths, written = scope.affected, outputs.old_paths, outputs.written
    summaries = {n: s for n, s in prev.files.items() if n in scope.now and n not in affected}
    for name in affected:
        st = scope.states[name]
        summaries[name] = FileSummary(scope.now[name], [e.resource.key for e, _ in st.parsed
                                                        if e is not None],
                                      sum(1 for e, _ in st.parsed if e is not None),
                                      list(st.loaded.warnings))
    ordered = {n: summaries[n] for n, _ in files}
    snap = Snapshot(key, ordered, dict(prev.platform), units, outputs.platform, placement_sig,
                    prev.clusters, dict(prev.buckets))
    snap.tree = tree_update(prev.tree, set(old_paths) - written, written)
    snap.per_cluster = per_cluster(old_paths, dict(prev.per_cluster), -1)
    snap.per_cluster = per_cluster([*(p for u in fresh.values() for p in u.outputs),
                                     *outputs.platform], snap.per_cluster, 1)
    if not in_memory:
        new_paths = [*((p, d) for u in fresh.values() for p, d in u.outputs.items()),
                     *outputs.platform.items(), (PLACEMENT_FILE, placement_sig)]
        snap.sig = (prev.sig ^ tree_sig([*old_paths.items(), (PLACEMENT_FILE, prev.placement)])
                    ^ tree_sig(new_paths))
    for b in compiled.touched:
        snap.buckets[b] = bucket_sums([*compiled.in_touched[b],
                                       *(u for k, u in fresh.items() if bucket(k) == b)])
    if not in_memory:  # what a stored base needs to become ``snap``
        last = Snapshot(snap.valid_for, {}, snap.platform, {}, snap.platform_outputs,
                        snap.placement, snap.clusters, {}, snap.sig, snap.per_cluster, {},
                        token="")
        change = Delta(prev.token, {**{n: None for n in scope.removed},
                                    **{n: summaries[n] for n in affected}},
                       {**{k: None for k in scope.old_units}, **fresh},
                       set(old_paths) - written, written,
                       {b: snap.buckets[b] for b in compiled.touched}, last)
        snap.token = prev.token
        snap.delta = prev.delta.then(change) if prev.delta is not None else change
    return snap


def snapshot_key(revision: str, fmt: str) -> tuple[str, ...]:
    """What a snapshot is valid for: (pincompile code digest, revision, output format)."""
    from pincompile.source.filecache import code_digest

    return (code_digest(), revision, fmt)


def _but_revision(key: tuple[str, ...]) -> tuple[str, ...]:
    """:func:`snapshot_key` without its revision."""
    return key[:1] + key[2:]


def _path(m: Manifest, fmt: str | None) -> str:
    """``m``'s output path (``fmt`` None, a check only: the YAML one, as validate lists it)."""
    return manifest_path(m, fmt or "yaml")


def _invalid(prev: Snapshot, diagnostics: list[Diagnostic], states: Mapping[str, FileState],
             affected: set[str], manifests: list[Manifest], now: Mapping[str, str],
             walked: LoadResult, fmt: str | None) -> Invalid | None:
    """The errors of an update, as a full compile reports them; None when one is located
    outside the affected files or a changed unit generates an unchanged unit's object
    (a full compile then tells)."""
    old_paths = {p for k in prev.units if prev.units[k].file in affected
                 for p in prev.units[k].outputs} | set(prev.platform_outputs)
    if (any(d.file not in affected for d in diagnostics)
            or any(_path(m, fmt) not in old_paths and prev.has(_path(m, fmt))
                   for m in manifests)):
        return None
    sources: dict[str, str] = {}
    for name in affected:
        sources.update(states[name].loaded.sources)
    warnings = [*walked.warnings,
                *(w for n, f in prev.files.items() if n in now and n not in affected
                  for w in f.warnings),
                *(w for n in affected for w in states[n].loaded.warnings)]
    return Invalid(sorted(set(diagnostics)), sorted(warnings), sources)


def _unchanged(prev: Snapshot, walked: LoadResult) -> Outcome:
    """Nothing changed: nothing to write (a long-running process reuses its last result)."""
    return Outcome(prev, {}, set(), *_counts(prev), units=0, warnings=_warnings(prev, walked))


def _counts(snap: Snapshot) -> tuple[int, int, int]:
    specs = sum(f.entries for f in snap.files.values())
    return specs, sum(snap.per_cluster.values()), len(snap.per_cluster)


def _warnings(snap: Snapshot, walked: LoadResult) -> list[Diagnostic]:
    return sorted([*walked.warnings, *(w for f in snap.files.values() for w in f.warnings)])
