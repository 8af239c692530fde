"""What the last clean compile produced (:class:`Snapshot`: per file, per unit, the output
files as a directory tree), its stored changes (:class:`Delta`), and building one from a
full compile (:func:`snapshot`)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pincompile.catalog import Entry
from pincompile.diagnostics import Diagnostic
from pincompile.emit.output import PLACEMENT_FILE, manifest_path
from pincompile.emit.signature import tree_id, tree_sig
from pincompile.incremental.units import (
    Unit,
    app_file,
    bucket,
    bucket_sums,
    claims_of,
    is_unit,
    link_of,
)
from pincompile.manifest import Manifest
from pincompile.models import Resource
from pincompile.placement.model import Key, Plan
from pincompile.placement.sums import counts
from pincompile.source.filecache import FileState

if TYPE_CHECKING:
    from pincompile.pipeline import Result


@dataclass
class FileSummary:
    digest: str
    units: list[Key]
    entries: int
    warnings: list[Diagnostic]

    def __reduce__(self) -> tuple[Any, ...]:  # a plain call unpickles faster (bench/RESULTS.md)
        return (FileSummary, (self.digest, self.units, self.entries, self.warnings))


@dataclass
class Snapshot:
    """What the last clean compile of one tree produced (see the module docstring)."""

    valid_for: tuple[str, ...]
    """(pincompile code digest, revision, output format): anything else → full compile."""
    files: dict[str, FileSummary]
    platform: dict[str, str]
    """Files that define anything but workloads and scalers: name → digest."""
    units: dict[Key, Unit]
    platform_outputs: dict[str, bytes]
    placement: bytes
    """Digest of ``placement.json``."""
    clusters: list[str]
    buckets: dict[int, Any] = field(default_factory=dict)
    """Bucket (see :func:`bucket`) → ``placement.sums.Sums`` of its placed workloads: an
    update sums again only the buckets of changed units, then adds up all buckets."""
    sig: int = 0
    """:func:`tree_sig` of every output file (``placement.json`` included)."""
    per_cluster: dict[str, int] = field(default_factory=dict)
    """Cluster → how many objects it gets (kept, so a summary needs no count)."""
    tree: dict[str, set[str]] = field(default_factory=dict)
    """Every output file as :func:`dir_tree` lists it (see :meth:`listed_in`)."""
    token: str = field(default_factory=lambda: os.urandom(16).hex())
    """Names this snapshot as the base of later :class:`Delta` s."""
    delta: Delta | None = None
    """What changed since the base named ``token`` was stored (updates store only this)."""
    dirs_seen: tuple[int, dict[str, tuple[int, int, int]]] = (0, {})
    """When (ns) and as what (mtime, ctime, inode) the output directories were last seen
    holding :attr:`tree`: an unchanged directory (not changed within the racy margin of
    that time) need not be listed again."""
    placement_stat: tuple[int, int, int, int] | None = None
    """(size, mtime, ctime, inode) of ``placement.json`` just after it was written: while
    they are the same, the file holds the bytes of digest :attr:`placement` (an update reads
    it, but need not hash it, which grows with the apps, to trust it)."""

    def has(self, path: str) -> bool:
        """Whether ``path`` is an output file of this snapshot."""
        folder, _, name = path.rpartition("/")
        return name in self.tree.get(folder, ()) and path not in self.tree

    def listed_in(self, out: Path) -> bool:
        """Whether directory ``out`` holds exactly this snapshot's files (its marker aside):
        one ``listdir`` per directory, so a stray or deleted file (or directory) sends a
        compile down the full path."""
        from pincompile.emit.output import MARKER
        from pincompile.source.treescan import RACY_MARGIN_NS

        taken, seen = self.dirs_seen
        for folder, names in self.tree.items():
            path = out / folder if folder else out
            known = seen.get(folder)
            if known is not None and max(known[0], known[1]) < taken - RACY_MARGIN_NS:
                try:
                    info = os.stat(path)
                except OSError:
                    return False
                if (info.st_mtime_ns, info.st_ctime_ns, info.st_ino) == known:
                    continue  # no name added or removed since it was seen
            try:
                found = os.listdir(path)
            except OSError:
                return False
            if not folder:
                names = names | {MARKER}
            if len(found) != len(names) or set(found) != names:
                return False
        return bool(self.tree)

    def seen_in(self, out: Path) -> None:
        """Record the output directories as they are now (``out`` was just written to
        hold :attr:`tree`); kept with the stored changes too."""
        taken = time.time_ns()
        seen: dict[str, tuple[int, int, int]] = {}
        for folder in self.tree:
            try:
                info = os.stat(out / folder if folder else out)
            except OSError:
                continue
            seen[folder] = (info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
        self.dirs_seen = (taken, seen)
        self.placement_stat = _stat_of(out / PLACEMENT_FILE)
        if self.delta is not None:
            self.delta.last.dirs_seen = self.dirs_seen
            self.delta.last.placement_stat = self.placement_stat

    def placement_unchanged(self, out: Path) -> bool:
        """Whether ``out``'s ``placement.json`` is, by its stat, the file written last
        (replaced or edited since, it has another inode, ctime or size)."""
        return self.placement_stat is not None and _stat_of(out / PLACEMENT_FILE) == (
            self.placement_stat)

    @property
    def id(self) -> str:
        """Written into the output directory's marker: the tree this snapshot describes."""
        return tree_id(self.sig)


def _stat_of(path: Path) -> tuple[int, int, int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)


@dataclass
class Delta:
    """The changes of one or more updates since a stored base snapshot: an update stores
    this alone (O(changed apps)), not the whole snapshot (O(all apps))."""

    base: str
    """The base snapshot's :attr:`Snapshot.token`."""
    files: dict[str, FileSummary | None]
    units: dict[Key, Unit | None]
    gone_paths: set[str]
    new_paths: set[str]
    buckets: dict[int, Any]
    last: Snapshot
    """The latest snapshot without files, units, paths and buckets (its small fields)."""

    def size(self) -> int:
        return len(self.files) + len(self.units)

    def then(self, later: Delta) -> Delta:
        """This delta followed by ``later`` (both against the same base)."""
        return Delta(self.base, {**self.files, **later.files}, {**self.units, **later.units},
                     self.gone_paths | later.gone_paths,
                     (self.new_paths - later.gone_paths) | later.new_paths,
                     {**self.buckets, **later.buckets}, later.last)


def complete(snap: Snapshot) -> bool:
    """Whether ``snap`` has every field of this version's :class:`Snapshot` (an older
    pincompile's pickle has not)."""
    import dataclasses

    return all(hasattr(snap, f.name) for f in dataclasses.fields(Snapshot))


def apply_delta(base: Snapshot, delta: Delta) -> Snapshot | None:
    """``base`` as ``delta`` changed it (in place); None when ``delta`` is not of it."""
    if delta.base != base.token:
        return None
    last = delta.last
    for name, summary in delta.files.items():
        if summary is None:
            base.files.pop(name, None)
        else:
            base.files[name] = summary
    for key, unit in delta.units.items():
        if unit is None:
            base.units.pop(key, None)
        else:
            base.units[key] = unit
    base.tree = tree_update(base.tree, delta.gone_paths, delta.new_paths)
    base.buckets.update(delta.buckets)
    base.valid_for, base.platform, base.platform_outputs = (last.valid_for, last.platform,
                                                          last.platform_outputs)
    base.placement, base.clusters, base.sig, base.per_cluster, base.dirs_seen = (
        last.placement, last.clusters, last.sig, last.per_cluster, last.dirs_seen)
    base.placement_stat = last.placement_stat
    base.delta = delta
    return base


@dataclass
class Outcome:
    """An incremental compile: the new snapshot and how the output tree changes."""

    snapshot: Snapshot
    write: dict[str, str | bytes]
    """Output path → new content (new or changed files)."""
    remove: set[str]
    specs: int
    objects: int
    clusters: int
    units: int
    """How many units were checked, placed and expanded again."""
    manifests: list[Manifest] | None = None
    plan: Plan | None = None
    warnings: list[Diagnostic] = field(default_factory=list)


@dataclass
class Invalid:
    """An update whose changed apps have errors: what a full compile reports (nothing is
    written, the snapshot stays that of the last clean compile)."""

    diagnostics: list[Diagnostic]
    warnings: list[Diagnostic]
    sources: dict[str, str]
    """The affected files' text (for the lines diagnostics show)."""





def tree_update(tree: Mapping[str, set[str]], gone: Iterable[str], new: Iterable[str]
                ) -> dict[str, set[str]]:
    """``tree`` (directory, ``""`` for OUT → the names in it: files and subdirectories)
    without the files ``gone`` and with the files ``new`` (a new dict; ``tree`` is kept).
    A directory is listed while it holds a file, as the output tree keeps it."""
    out = {folder: set(names) for folder, names in tree.items()}
    for path in gone:
        while True:
            folder, _, name = path.rpartition("/")
            names = out.get(folder)
            if names is None or name not in names:
                break
            names.discard(name)
            if names or not folder:
                break
            del out[folder]
            path = folder
    for path in new:
        while True:
            folder, _, name = path.rpartition("/")
            names = out.setdefault(folder, set())
            if name in names:
                break
            names.add(name)
            if not folder:
                break
            path = folder
    return out





def unit_of(resource: Resource, file: str, plan: Plan, in_memory: bool) -> Unit:
    """A unit as ``plan`` placed it (``in_memory``: with its decision and, to come, objects)."""
    unit = Unit(resource.key, file, link_of(resource), claims_of(resource), outputs={})
    placed = plan.placed.get(resource.key)
    if placed is not None:
        unit.counted = counts(placed)
        if in_memory:
            unit.decision = placed.decision
    unit.scaler_target = plan.scaler_targets.get(resource.key)
    if in_memory:
        unit.manifests = []
    return unit


def owned(m: Manifest, path: str, sig: bytes, units: Mapping[Key, Unit]) -> bool:
    """Record an output file with the unit that generates it; False for platform objects."""
    if not _record(m.source, path, sig, units):
        return False
    owner = units[m.source.resource.key]  # type: ignore[union-attr]
    if owner.manifests is not None:
        owner.manifests.append(m)
    return True


def _record(source: Entry[Any] | None, path: str, sig: bytes, units: Mapping[Key, Unit]
            ) -> bool:
    if source is None or not is_unit(source.resource):
        return False
    owner = units.get(source.resource.key)
    if owner is None:
        return False
    owner.outputs[path] = sig
    return True


Output = tuple[str, "Entry[Any] | None", bytes]
"""A written output file: (path, the spec that generated it or None, content digest)."""


def snapshot(valid_for: tuple[str, ...], states: Iterable[FileState], result: Result, fmt: str,
             written: Iterable[Output] | None = None, placement: bytes = b"") -> Snapshot:
    """The snapshot of a clean full compile (``result``; ``written``
    the files written for it and ``placement`` the digest of ``placement.json``). Without
    ``written`` (a long-running process that writes no files) it keeps the objects of
    ``result`` and the decisions instead of output digests."""
    in_memory = written is None
    plan: Plan = result.plan
    files: dict[str, FileSummary] = {}
    platform: dict[str, str] = {}
    units: dict[Key, Unit] = {}
    for state in states:
        keys: list[Key] = []
        for entry, _ in state.parsed:
            if entry is None or not is_unit(entry.resource):
                continue
            units[entry.resource.key] = unit_of(entry.resource, state.name, plan, in_memory)
            keys.append(entry.resource.key)
        files[state.name] = FileSummary(state.digest, keys, sum(
            1 for e, _ in state.parsed if e is not None), list(state.loaded.warnings))
        if not app_file(state):
            platform[state.name] = state.digest
    platform_outputs: dict[str, bytes] = {}
    if written is None:
        for m in result.manifests:
            path = manifest_path(m, fmt)
            if not owned(m, path, b"", units):
                platform_outputs[path] = b""
    else:
        for path, source, sig in written:
            if not _record(source, path, sig, units):
                platform_outputs[path] = sig
    snap = Snapshot(valid_for, files, platform, units, platform_outputs, placement,
                    sorted(result.catalog.clusters))
    every = [*(p for u in units.values() for p in u.outputs), *platform_outputs]
    snap.tree = tree_update({}, (), [*every, PLACEMENT_FILE])
    snap.per_cluster = per_cluster(set(every), {}, 1)
    if not in_memory:
        snap.sig = tree_sig([*((p, d) for u in units.values() for p, d in u.outputs.items()),
                             *platform_outputs.items(), (PLACEMENT_FILE, snap.placement)])
    by_bucket: dict[int, list[Unit]] = {}
    for unit in units.values():
        by_bucket.setdefault(bucket(unit.key), []).append(unit)
    snap.buckets = {b: bucket_sums(us) for b, us in by_bucket.items()}
    return snap


def per_cluster(paths: Iterable[str], counts: dict[str, int], step: int) -> dict[str, int]:
    """``counts`` (cluster → objects) with ``step`` added for every output path."""
    for path in paths:
        cluster = path.split("/", 1)[0]
        counts[cluster] = counts.get(cluster, 0) + step
    return {c: n for c, n in counts.items() if n}
