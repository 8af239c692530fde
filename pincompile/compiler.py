"""Compiling in memory, again and again: the :class:`Compiler` loads and parses only the
files that changed (a long-running process keeps one), :func:`compile_path` compiles a
tree once, :func:`validate_tree` checks one (``pincompile validate``: nothing written,
the last valid check's snapshot kept in the cache); :class:`CachedTree` holds the steps it
shares with ``pincompile compile --out-dir`` (:mod:`pincompile.emit.folder`)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pincompile.catalog import Catalog
from pincompile.diagnostics import Diagnostic
from pincompile.parse import parse_document
from pincompile.pipeline import Result, run_parsed
from pincompile.source.filecache import FileState, Store, file_digest
from pincompile.source.gitsource import git_revision
from pincompile.source.loader import LoadResult, load_text
from pincompile.source.readahead import Loading, ReadTree, load_ahead, read_ahead

if TYPE_CHECKING:
    from pincompile.emit.parallel import Emitted
    from pincompile.forked import Forked
    from pincompile.incremental.snapshots import Invalid, Outcome, Snapshot
    from pincompile.source.treescan import Scan


class Compiler:
    """Compiles spec trees again and again, loading and parsing only files that changed.

    It keeps every file's :class:`~pincompile.source.filecache.FileState` in memory between
    calls (a long-running process such as ``serve`` keeps one ``Compiler``), and reads and
    writes them in an on-disk :class:`~pincompile.source.filecache.Store` when given one.
    Whatever it reuses, :meth:`compile` returns what a cold :func:`run` over the same files
    returns.

    ``remember``: keep a snapshot of each clean compile so that the next :meth:`compile`
    re-runs only the changed apps (for a process that compiles again; a one-shot command
    passes False and saves building it). ``jobs``: processes that load files and check
    specs (a command may fork; a process with threads keeps 1).
    """

    def __init__(self, store: Store | None = None, *, remember: bool = True,
                 jobs: int = 1) -> None:
        self.store = store
        self.remember = remember
        self.jobs = jobs
        self.states: dict[str, FileState] = {}
        self._snapshot: Snapshot | None = None
        self._last: Result | None = None
        self.stats = {"memory": 0, "disk": 0, "parsed": 0}
        self.reused = False
        """Whether the last compile re-ran only the changed apps (an incremental compile)."""

    def compile(self, files: Iterable[tuple[str, bytes]] = (), *, revision: str = "unknown",
                expand: bool = True, loaded: LoadResult | None = None,
                read: ReadTree | None = None) -> Result:
        """Compile ``files`` — (name used in locations, content) in load order — plus
        whatever ``loaded`` already holds (diagnostics and warnings of the tree walk); or
        the tree ``read`` (its files, already being loaded ahead, and its walk). A result
        with diagnostics holds no objects to use (found incrementally, it holds none)."""
        if read is not None:
            files, loaded = read.files, read.walked
        loaded = loaded if loaded is not None else LoadResult()
        catalog = Catalog()
        parsed: list[Diagnostic] = []
        seen: dict[str, FileState] = {}
        files = list(files)
        if read is not None:
            digests, ahead = read.digests, read.ahead
        else:
            digests = [file_digest(name, raw) for name, raw in files]
            ahead = load_ahead(files, digests, self.jobs, self.cached)
        for (name, raw), digest in zip(files, digests, strict=True):
            state = self.file_state(name, raw, digest, ahead)
            seen[name] = state
            loaded.extend(state.loaded)
            for entry, problems in state.parsed:
                parsed.extend(problems)
                if entry is not None:
                    catalog.add(entry)
        self.states = seen  # files no longer in the tree are forgotten
        self.reused = False
        if expand:
            done = self._incremental(seen, loaded, catalog, revision)
            if done is not None:
                return done
        result = run_parsed(loaded, catalog, [*loaded.diagnostics, *parsed],
                             revision=revision, expand=expand, jobs=self.jobs)
        if expand and result.ok and self.remember:
            from pincompile import incremental

            self._snapshot = incremental.snapshot(
                incremental.snapshot_key(revision, "yaml"), seen.values(), result, "yaml")
            self._last = result
        elif expand:
            self._snapshot = self._last = None
        return result

    def _incremental(self, seen: dict[str, FileState], loaded: LoadResult, catalog: Catalog,
                     revision: str) -> Result | None:
        """Only the changed apps again, against the last clean compile (in memory)."""
        if self._snapshot is None:
            return None
        from pincompile import incremental

        valid_for = incremental.snapshot_key(revision, "yaml")
        last = self._last
        if (last is not None and valid_for == self._snapshot.valid_for and not loaded.diagnostics
                and {n: s.digest for n, s in seen.items()}
                == {n: f.digest for n, f in self._snapshot.files.items()}):
            self.reused = True  # nothing changed: the last result again
            return Result(catalog=catalog, sources=loaded.sources, plan=last.plan,
                          manifests=list(last.manifests), warnings=sorted(loaded.warnings))
        outcome = incremental.update(
            self._snapshot, valid_for,
            [(n, s.digest) for n, s in seen.items()], lambda n, _: seen[n], loaded,
            revision=revision, fmt="yaml", in_memory=True)
        if isinstance(outcome, incremental.Invalid):
            # the changed apps' errors, as a full compile reports them; the snapshot stays
            # the last clean compile's, so the push that fixes them is incremental too
            self.reused = True
            return Result(catalog=catalog, sources=loaded.sources,
                          diagnostics=outcome.diagnostics, warnings=outcome.warnings)
        if outcome is None:
            return None  # an edit that reaches beyond the changed apps: a full compile
        self._snapshot = outcome.snapshot
        self.reused = True
        self._last = Result(catalog=catalog, sources=loaded.sources, plan=outcome.plan,
                            manifests=outcome.manifests or [], warnings=sorted(loaded.warnings))
        return self._last

    def cached(self, name: str, digest: str) -> bool:
        """Whether file ``name`` needs no loading: in memory or in the cache."""
        return self._remembered(name, digest) is not None or (
            self.store is not None and self.store.has(digest))

    def _remembered(self, name: str, digest: str) -> FileState | None:
        """File ``name`` as the last compile held it, when its content is unchanged."""
        known = self.states.get(name)
        return known if known is not None and known.digest == digest else None

    def file_state(self, name: str, raw: bytes, digest: str,
               ahead: dict[str, Loading] | None = None) -> FileState:
        """File ``name`` (content ``raw``, :func:`file_digest` ``digest``) loaded and parsed:
        from memory, the cache, a process loading ahead, or ``raw`` itself."""
        known = self._remembered(name, digest)
        if known is not None:
            self.stats["memory"] += 1
            return known
        stored = self.store.get(digest) if self.store is not None else None
        if stored is not None and stored.name == name:
            self.stats["disk"] += 1
            return stored
        loading = ahead.get(name) if ahead else None
        loaded = loading.load(name) if loading is not None else load_text(name, raw)
        state = FileState(name, digest, loaded, [parse_document(d) for d in loaded.documents])
        self.stats["parsed"] += 1
        if self.store is not None:
            self.store.put(state)
        return state


def compile_path(root: Path, *, revision: str | None = None, expand: bool = True,
                 cache_dir: Path | None = None) -> Result:
    """Load and compile the spec tree at ``root``; with ``cache_dir``, reuse (and keep)
    every unchanged file's loaded and parsed documents there."""
    compiler = Compiler(Store(cache_dir) if cache_dir is not None else None, remember=False)
    return compiler.compile(read=read_ahead(root, cache_dir, 1), expand=expand,
                            revision=revision or git_revision(root))


@dataclass
class CachedTree:
    """A tree walked by :func:`~pincompile.source.treescan.scan_tree` (unchanged files known
    by their stat) and compiled against the snapshot of its last clean compile, kept in the
    cache under :attr:`key`: when only app files changed since, only those apps are compiled
    again (see :mod:`pincompile.incremental`); else every file. The steps
    :func:`validate_tree` and :func:`~pincompile.emit.folder.compile_to_dir` share."""

    scan: Scan
    compiler: Compiler
    key: str
    """Where the snapshot is kept: names the tree (and the output folder, if any)."""
    valid_for: tuple[str, ...]
    """:func:`~pincompile.incremental.snapshot_key` of this compile."""
    revision: str

    @classmethod
    def walk(cls, root: Path, store: Store | None, key: str, *, revision: str, fmt: str,
             jobs: int, scanning: Forked[Scan] | None = None) -> CachedTree:
        """Walk ``root`` (or take the walk ``scanning`` started, with the same ``store``)."""
        from pincompile.incremental import snapshot_key
        from pincompile.source.treescan import scan_tree

        scan = scanning.result() if scanning is not None else scan_tree(root, store)
        return cls(scan, Compiler(store, remember=False, jobs=jobs),
                   hashlib.sha256(key.encode()).hexdigest(), snapshot_key(revision, fmt),
                   revision)

    def last(self) -> Snapshot | None:
        """The stored snapshot, when this compile may update it (none without a cache)."""
        from pincompile.incremental.stored import read_snapshot

        store = self.compiler.store
        prev = read_snapshot(store, self.key) if store is not None else None
        return prev if prev is not None and prev.valid_for == self.valid_for else None

    def update(self, prev: Snapshot, fmt: str | None, *,
               read_placement: Callable[[], bytes | None] = lambda: None,
               placement_unchanged: bool = False) -> Outcome | Result | None:
        """Only the changed apps compiled again, against ``prev`` (``fmt`` None: checked
        only; the other arguments are :func:`~pincompile.incremental.update`'s): the outcome,
        or their errors as a full compile reports them, or None when the edit reaches
        beyond them (a full compile then)."""
        from pincompile import incremental
        from pincompile.incremental.stored import state_of

        store, file_state = self.compiler.store, self.compiler.file_state
        found = incremental.update(
            prev, self.valid_for, self.scan.digests,
            lambda name, digest: state_of(store, self.scan, file_state, name, digest),
            self.scan.walked, revision=self.revision, fmt=fmt, read_placement=read_placement,
            placement_unchanged=placement_unchanged)
        return _invalid_result(found) if isinstance(found, incremental.Invalid) else found

    def compile_all(self) -> Result:
        """Every file compiled: checked and placed, not expanded (the files the walk did not
        read are read now; those the cache holds are not loaded)."""
        files, digests = self.scan.files()
        compiler = self.compiler
        read = ReadTree(files, digests, self.scan.walked,
                        load_ahead(files, digests, compiler.jobs, compiler.cached))
        return compiler.compile(read=read, revision=self.revision, expand=False)

    def snapshot(self, result: Result, fmt: str, emitted: Emitted) -> Snapshot:
        """The snapshot of :meth:`compile_all`'s clean ``result``, expanded as ``emitted``."""
        from pincompile import incremental

        return incremental.snapshot(self.valid_for, self.compiler.states.values(), result,
                                    fmt, emitted.sources(result.catalog), emitted.placement)

    def keep(self, snap: Snapshot) -> None:
        """Store ``snap`` under :attr:`key` (an update's as its changes alone)."""
        from pincompile.incremental.stored import write_snapshot

        if self.compiler.store is not None:
            write_snapshot(self.compiler.store, self.key, snap)


def _invalid_result(found: Invalid) -> Result:
    """The errors an update found, as a result (no specs: the affected files' text only)."""
    return Result(Catalog(), found.sources, found.diagnostics, warnings=found.warnings)


VALIDATE_REVISION = "validate"
"""The revision a validation compiles at (objects record it; nothing is written)."""


@dataclass
class Validation:
    """What :func:`validate_tree` found."""

    result: Result
    """Diagnostics, warnings and the sources they point into (after an incremental check
    its catalog is empty: :attr:`specs` counts them)."""
    specs: int
    objects: int
    """Objects a compile would generate."""


def validate_tree(root: Path, *, cache_dir: Path | None = None, jobs: int | None = None,
                  scanning: Forked[Scan] | None = None) -> Validation:
    """``pincompile validate ROOT``: every check a compile runs, nothing written.

    With ``cache_dir``, a snapshot of the last valid check of ROOT is kept there, as
    :func:`~pincompile.emit.folder.compile_to_dir` keeps one (without output files): when
    only app files changed since, only those apps are checked, placed and expanded again,
    and their errors are the ones a full check reports (see :class:`CachedTree`).
    ``scanning``: ROOT's walk already started by :func:`~pincompile.source.treescan.scan_ahead`."""
    from pincompile.emit.parallel import expand_result
    from pincompile.forked import cpus

    store = Store(cache_dir) if cache_dir is not None else None
    tree = CachedTree.walk(root, store, f"validate\0{root.resolve()}",
                           revision=VALIDATE_REVISION, fmt="", jobs=jobs or cpus(),
                           scanning=scanning)
    prev = tree.last()
    found = tree.update(prev, None) if prev is not None else None
    if isinstance(found, Result):
        return Validation(found, 0, 0)
    if found is not None:
        if found.snapshot is not prev:
            tree.keep(found.snapshot)
        return Validation(Result(Catalog(), {}, warnings=found.warnings), found.specs,
                          found.objects)
    result = tree.compile_all()
    emitted = expand_result(result, None, fmt=None, revision=VALIDATE_REVISION,
                            jobs=tree.compiler.jobs)
    if store is not None and not result.diagnostics:
        tree.keep(tree.snapshot(result, "yaml", emitted))
    return Validation(result, len(result.catalog.entries), len(emitted.rows))
