"""The one way through: load → parse → check → place → expand.

Every stage adds diagnostics; nothing is written and nothing is applied when any stage
reported an error. The pipeline is pure: files (or git blobs) in, objects out.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pincompile.catalog import Catalog, note_invalid
from pincompile.diagnostics import Diagnostic, add_new
from pincompile.manifest import Manifest
from pincompile.parse import parse, parse_document
from pincompile.repoconfig import repo_config
from pincompile.source import readahead
from pincompile.source.cache import FileState, Store, file_digest
from pincompile.source.loader import LoadResult, load_text
from pincompile.source.readahead import Loading, ReadTree, load_ahead, read_ahead

if TYPE_CHECKING:
    from pincompile.emit.parallel import Emitted, Row


@dataclass
class Result:
    """What a compile produced: specs, diagnostics, the placement plan and the objects."""

    catalog: Catalog
    sources: dict[str, str]
    diagnostics: list[Diagnostic] = field(default_factory=list)
    plan: Any = None
    manifests: list[Manifest] = field(default_factory=list)
    warnings: list[Diagnostic] = field(default_factory=list)
    """Located findings that do not make the specs invalid (files skipped, ...)."""

    @property
    def ok(self) -> bool:
        return not self.diagnostics


def run(loaded: LoadResult, *, revision: str = "unknown", expand: bool = True) -> Result:
    """Run every stage over loaded documents and collect all diagnostics.

    Later stages guard against what earlier ones already reported (a duplicate container,
    say); where two stages flag the same place, the earlier stage's message is kept.
    """
    catalog, diagnostics = parse(loaded)
    return _run_parsed(loaded, catalog, diagnostics, revision=revision, expand=expand)


def _run_parsed(loaded: LoadResult, catalog: Catalog, diagnostics: list[Diagnostic], *,
                revision: str, expand: bool, jobs: int = 1) -> Result:
    """check → place → expand over a parsed catalog (with ``jobs`` > 1 and a large catalog,
    the checks run in a forked process while placement runs here)."""
    from pincompile.checks import check
    from pincompile.emit.output import too_large_all
    from pincompile.expand import expand_all
    from pincompile.placement import plan as place

    result = Result(catalog=catalog, sources=loaded.sources, diagnostics=diagnostics,
                    warnings=sorted(loaded.warnings))
    note_invalid(catalog, loaded.documents)
    config, problems = repo_config(loaded.sources)
    add_new(result.diagnostics, problems)
    if jobs > 1 and len(catalog.entries) >= readahead.LOAD_AHEAD_MIN:
        from pincompile.forked import Forked

        checking = Forked(check, catalog, config)
        plan, problems = place(catalog)
        add_new(result.diagnostics, checking.result())
    else:
        add_new(result.diagnostics, check(catalog, config))
        plan, problems = place(catalog)
    result.plan = plan
    add_new(result.diagnostics, problems)
    if expand:
        manifests, problems = expand_all(catalog, plan, revision=revision)
        result.manifests = manifests
        add_new(result.diagnostics, problems)
        add_new(result.diagnostics, too_large_all(manifests))
    result.diagnostics = sorted(set(result.diagnostics))
    return result


class Compiler:
    """Compiles spec trees again and again, loading and parsing only files that changed.

    It keeps every file's :class:`~pincompile.source.cache.FileState` in memory between calls (a
    long-running process such as ``serve`` keeps one ``Compiler``), and reads and writes
    them in an on-disk :class:`~pincompile.source.cache.Store` when given one. Whatever it reuses,
    :meth:`compile` returns what a cold :func:`run` over the same files returns.

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
        self._files: dict[str, FileState] = {}
        self._snapshot: Any = None
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
            ahead = load_ahead(files, digests, self.jobs, self._cached)
        for (name, raw), digest in zip(files, digests, strict=True):
            state = self._state(name, raw, digest, ahead)
            seen[name] = state
            loaded.extend(state.loaded)
            for entry, problems in state.parsed:
                parsed.extend(problems)
                if entry is not None:
                    catalog.add(entry)
        self._files = seen  # files no longer in the tree are forgotten
        self.reused = False
        if expand:
            done = self._incremental(seen, loaded, catalog, revision)
            if done is not None:
                return done
        result = _run_parsed(loaded, catalog, [*loaded.diagnostics, *parsed],
                             revision=revision, expand=expand, jobs=self.jobs)
        if expand and result.ok and self.remember:
            from pincompile import incremental

            self._snapshot = incremental.snapshot(
                incremental.context_of(revision, "yaml"), seen.values(), result, "yaml")
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

        context = incremental.context_of(revision, "yaml")
        last = self._last
        if (last is not None and context == self._snapshot.context and not loaded.diagnostics
                and {n: s.digest for n, s in seen.items()}
                == {n: f.digest for n, f in self._snapshot.files.items()}):
            self.reused = True  # nothing changed: the last result again
            return Result(catalog=catalog, sources=loaded.sources, plan=last.plan,
                          manifests=list(last.manifests), warnings=sorted(loaded.warnings))
        outcome = incremental.update(
            self._snapshot, context,
            [(n, s.digest) for n, s in seen.items()], lambda n, _: seen[n], loaded,
            revision=revision, fmt="yaml", keep=True)
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

    def _cached(self, name: str, digest: str) -> bool:
        """Whether file ``name`` needs no loading: in memory or in the cache."""
        return self._remembered(name, digest) is not None or (
            self.store is not None and self.store.has(digest))

    def _remembered(self, name: str, digest: str) -> FileState | None:
        """File ``name`` as the last compile held it, when its content is unchanged."""
        known = self._files.get(name)
        return known if known is not None and known.digest == digest else None

    def _state(self, name: str, raw: bytes, digest: str,
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


def compile_rendered(root: Path, *, fmt: str = "yaml", revision: str | None = None,
                     cache_dir: Path | None = None, jobs: int | None = None,
                     read: ReadTree | None = None) -> tuple[Result, list[Row]]:
    """Compile ``root`` and serialize every object as ``fmt``, in ``jobs`` processes (see
    :mod:`pincompile.emit.parallel`): the result (without objects) and one
    :class:`~pincompile.emit.parallel.Row` per object, sorted by path, its text included (none when
    the result has diagnostics).
    ``read``: ``root`` as :func:`~pincompile.source.readahead.read_ahead` read it (with the same
    ``cache_dir`` and ``jobs``)."""
    from pincompile.forked import cpus

    jobs = jobs or cpus()
    read = read or read_ahead(root, cache_dir, jobs)
    revision = revision or git_revision(root)
    compiler = Compiler(Store(cache_dir) if cache_dir is not None else None, remember=False,
                        jobs=jobs)
    result = compiler.compile(read=read, revision=revision, expand=False)
    return result, _expand(result, None, fmt=fmt, revision=revision, jobs=jobs).rows


def _expand(result: Result, directory: Path | None, *, fmt: str | None, revision: str,
            jobs: int) -> Emitted:
    """Expand (and serialize as ``fmt``, and write under ``directory``) a compile checked
    and placed by ``result``; its problems join the result's diagnostics. With earlier
    diagnostics the objects are only generated for their problems (every error is reported
    at once) and no rows are returned."""
    from pincompile.emit.parallel import Emitted, emit
    from pincompile.incremental import digest

    if result.plan is None:
        return Emitted()
    failed = bool(result.diagnostics)
    emitted = emit(None if failed else directory, result.catalog, result.plan,
                   revision=revision, fmt=None if failed else fmt, digest=digest, jobs=jobs)
    add_new(result.diagnostics, emitted.diagnostics)
    result.diagnostics = sorted(set(result.diagnostics))
    return Emitted() if result.diagnostics else emitted


def git_revision(root: Path) -> str:
    """The git commit of ``root`` (``<sha>`` or ``<sha>-dirty``), or ``unknown``."""
    import subprocess

    try:
        cwd = root if root.is_dir() else root.parent
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True,
                             text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "."], cwd=cwd,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return f"{sha}-dirty" if dirty else sha
    except (OSError, subprocess.SubprocessError):
        return "unknown"


@dataclass
class DirCompile:
    """What :func:`compile_to_dir` did: a full compile (``result``) or an incremental one
    (``outcome``); an incremental compile that found errors gives a ``result`` holding
    them alone (what a full compile reports)."""

    result: Result | None = None
    outcome: Any = None
    written: int = 0
    """Output files written (the rest were left as they were)."""
    objects: int = 0
    """Objects in OUT after a full compile."""
    clusters: int = 0
    """Clusters with objects in OUT after a full compile."""


def _read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _state_of(compiler: Compiler, scan: Any, name: str, digest: str) -> FileState | None:
    """File ``name`` loaded and parsed, as it was when ``scan`` named its ``digest``: from
    the cache by that digest, else read again (None when it changed since: a full compile
    then reads everything again)."""
    if compiler.store is not None:
        stored = compiler.store.get(digest)
        if stored is not None and stored.name == name:
            return stored
    raw = scan.read(name)
    if raw is None or file_digest(name, raw) != digest:
        return None
    return compiler._state(name, raw, digest)


DELTA_LIMIT = 2000
"""Files and units an update may store as changes to the stored snapshot; beyond that, the
whole snapshot is stored again."""


def _delta_key(key: str) -> str:
    return hashlib.sha256(f"delta\0{key}".encode()).hexdigest()


def _read_snapshot(store: Store, key: str) -> Any:
    """The snapshot stored under ``key``, with the changes stored since applied."""
    from pincompile import incremental

    base = store.read(key)
    if not isinstance(base, incremental.Snapshot) or not incremental.complete(base):
        return None  # another version's snapshot
    delta = store.read(_delta_key(key))
    if isinstance(delta, incremental.Delta):
        return incremental.apply_delta(base, delta) or base
    return base


def _write_snapshot(store: Store, key: str, snap: Any) -> None:
    """Store an updated snapshot: as its changes since the stored one, or whole."""
    if snap.delta is not None and snap.delta.size() <= DELTA_LIMIT:
        store.write(_delta_key(key), snap.delta)
        return
    snap.delta, snap.token = None, os.urandom(16).hex()  # earlier changes no longer apply
    store.write(key, snap)


def compile_to_dir(root: Path, out: Path, *, fmt: str = "yaml", revision: str | None = None,
                   cache_dir: Path | None = None, jobs: int | None = None,
                   scanning: Any = None, read: ReadTree | None = None) -> DirCompile:
    """``pincompile compile ROOT -o OUT``: compile and write OUT.

    With ``cache_dir``, a snapshot of the last clean compile of ROOT into OUT is kept there;
    when only app files changed since (and OUT holds what that compile wrote: its marker
    names the same content, and it has the same file names), only the changed apps are
    compiled again and only changed output files are written (see
    :mod:`pincompile.incremental`). Otherwise the objects are expanded and written by
    ``jobs`` processes (default: one per CPU; see :mod:`pincompile.emit.parallel`); the result then
    holds no objects. A file edited by hand inside OUT is not noticed (OUT is pincompile's:
    a full compile, or ``--no-cache``, rewrites it). Nothing is written when the result
    has diagnostics. ``scanning``: ROOT's walk already started by
    :func:`~pincompile.source.treescan.scan_ahead` (with the same ``cache_dir``); or, without a
    cache (nothing to reuse, so no walk by ``stat``), ``read``: ROOT as
    :func:`~pincompile.source.readahead.read_ahead` read it (its files already being loaded).
    """
    from pincompile import incremental
    from pincompile.emit.output import PLACEMENT_FILE, marker_id, update_tree
    from pincompile.forked import cpus
    from pincompile.source.treescan import scan_tree

    revision = revision or git_revision(root)
    store = Store(cache_dir) if cache_dir is not None else None
    compiler = Compiler(store, remember=False)
    if read is not None and store is None:
        compiler.jobs = jobs = jobs or cpus()
        return _full_compile(compiler, out, read.files, revision=revision, fmt=fmt,
                             context=None, key="", read=read)
    # unchanged files (by their stat) are not read
    scan = scanning.result() if scanning is not None else scan_tree(root, store)
    walked = scan.walked
    context = incremental.context_of(revision, fmt)
    key = hashlib.sha256(f"snapshot\0{root.resolve()}\0{out.resolve()}".encode()).hexdigest()
    prev = _read_snapshot(store, key) if store is not None else None
    if (isinstance(prev, incremental.Snapshot) and prev.context == context and out.is_dir()
            and marker_id(out) == prev.id and prev.listed_in(out)):
        outcome = incremental.update(
            prev, context, scan.digests,
            lambda name, digest: _state_of(compiler, scan, name, digest), walked,
            revision=revision, fmt=fmt, read_placement=lambda: _read_bytes(out / PLACEMENT_FILE),
            placement_unchanged=prev.placement_unchanged(out))
        if isinstance(outcome, incremental.Invalid):  # the changed apps' errors; no write
            return DirCompile(result=Result(
                catalog=Catalog(), sources=outcome.sources, diagnostics=outcome.diagnostics,
                warnings=outcome.warnings))
        if outcome is not None:
            update_tree(out, outcome.write, outcome.remove, outcome.snapshot.id)
            assert store is not None
            if outcome.snapshot is not prev:  # else nothing changed
                outcome.snapshot.seen_in(out)
                _write_snapshot(store, key, outcome.snapshot)
            return DirCompile(outcome=outcome, written=len(outcome.write))
    files = scan.files()
    compiler.jobs = jobs or cpus()
    return _full_compile(compiler, out, files, revision=revision, fmt=fmt, context=context,
                         key=key, loaded=walked)


def _full_compile(compiler: Compiler, out: Path, files: list[tuple[str, bytes]], *,
                  revision: str, fmt: str, context: Any, key: str,
                  loaded: LoadResult | None = None, read: ReadTree | None = None
                  ) -> DirCompile:
    """Compile ``files`` (or ``read``) and replace OUT with every object; with a cache, keep
    the snapshot of this compile under ``key``."""
    from pincompile import incremental
    from pincompile.emit.output import replace_tree

    store, jobs = compiler.store, compiler.jobs
    result = compiler.compile(files, revision=revision, loaded=loaded, read=read, expand=False)
    done = DirCompile(result=result)
    if result.diagnostics:  # nothing is written; expansion still reports its problems
        _expand(result, None, fmt=None, revision=revision, jobs=jobs)
        return done
    if not result.catalog.entries:  # no specs: a usage error, nothing to write
        return done

    def fill(directory: Path) -> str | None:
        emitted = _expand(result, directory, fmt=fmt, revision=revision, jobs=jobs)
        if result.diagnostics:
            return None
        done.written = len(emitted.rows) + 1
        done.objects = len(emitted.rows)
        done.clusters = len({r.cluster for r in emitted.rows})
        if store is None:
            return incremental.tree_id(emitted.signature)
        states = [compiler._files[name] for name, _ in files]
        snaps.append(incremental.snapshot(context, states, result, fmt,
                                          emitted.sources(result.catalog), emitted.placement))
        return snaps[0].id

    snaps: list[incremental.Snapshot] = []
    if replace_tree(out, fill) and snaps and store is not None:
        snaps[0].seen_in(out)
        store.write(key, snaps[0])
    return done


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
                  scanning: Any = None) -> Validation:
    """``pincompile validate ROOT``: every check a compile runs, nothing written.

    With ``cache_dir``, a snapshot of the last valid check of ROOT is kept there, as
    :func:`compile_to_dir` keeps one (without output files): when only app files changed
    since, only those apps are checked, placed and expanded again, and their errors are
    the ones a full check reports (see :mod:`pincompile.incremental`). ``scanning``:
    ROOT's walk already started by :func:`~pincompile.source.treescan.scan_ahead`."""
    from pincompile import incremental
    from pincompile.forked import cpus
    from pincompile.source.treescan import scan_tree

    store = Store(cache_dir) if cache_dir is not None else None
    scan = scanning.result() if scanning is not None else scan_tree(root, store)
    compiler = Compiler(store, remember=False, jobs=jobs or cpus())
    context = incremental.context_of(VALIDATE_REVISION, "")
    key = hashlib.sha256(f"validate\0{root.resolve()}".encode()).hexdigest()
    prev = _read_snapshot(store, key) if store is not None else None
    if store is not None and isinstance(prev, incremental.Snapshot) and prev.context == context:
        outcome = incremental.update(
            prev, context, scan.digests,
            lambda name, digest: _state_of(compiler, scan, name, digest), scan.walked,
            revision=VALIDATE_REVISION, fmt=None)
        if isinstance(outcome, incremental.Invalid):
            return Validation(Result(Catalog(), outcome.sources, outcome.diagnostics,
                                     warnings=outcome.warnings), 0, 0)
        if outcome is not None:
            if outcome.snapshot is not prev:
                _write_snapshot(store, key, outcome.snapshot)
            return Validation(Result(Catalog(), {}, warnings=outcome.warnings), outcome.specs,
                              outcome.objects)
    readable = [(name, raw, digest) for name, digest in scan.digests
                if (raw := scan.read(name)) is not None]
    files = [(name, raw) for name, raw, _ in readable]
    digests = [digest for _, _, digest in readable]
    read = ReadTree(files, digests, scan.walked,
                    load_ahead(files, digests, compiler.jobs, compiler._cached))
    result = compiler.compile(read=read, revision=VALIDATE_REVISION, expand=False)
    emitted = _expand(result, None, fmt=None, revision=VALIDATE_REVISION, jobs=compiler.jobs)
    if store is not None and not result.diagnostics:
        states = [compiler._files[name] for name, _ in files]
        store.write(key, incremental.snapshot(context, states, result, "yaml",
                                              emitted.sources(result.catalog)))
    return Validation(result, len(result.catalog.entries), len(emitted.rows))
