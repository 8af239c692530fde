"""The output folder: ``pincompile compile ROOT --out-dir OUT`` expands, serializes and writes
every object (in one process per CPU), or rewrites only the changed apps' files against
the snapshot of the last clean compile kept in the cache."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pincompile.catalog import Catalog
from pincompile.diagnostics import add_new
from pincompile.source.filecache import Store
from pincompile.source.loader import LoadResult
from pincompile.source.readahead import ReadTree, read_ahead

if TYPE_CHECKING:
    from pincompile.emit.parallel import Emitted, Row


from pincompile.compiler import Compiler
from pincompile.emit.signature import tree_id
from pincompile.pipeline import Result
from pincompile.source.gitsource import git_revision


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
    return result, expand_result(result, None, fmt=fmt, revision=revision, jobs=jobs).rows


def expand_result(result: Result, directory: Path | None, *, fmt: str | None, revision: str,
            jobs: int) -> Emitted:
    """Expand (and serialize as ``fmt``, and write under ``directory``) a compile checked
    and placed by ``result``; its problems join the result's diagnostics. With earlier
    diagnostics the objects are only generated for their problems (every error is reported
    at once) and no rows are returned."""
    from pincompile.emit.parallel import Emitted, emit
    from pincompile.emit.signature import digest

    if result.plan is None:
        return Emitted()
    failed = bool(result.diagnostics)
    emitted = emit(None if failed else directory, result.catalog, result.plan,
                   revision=revision, fmt=None if failed else fmt, digest=digest, jobs=jobs)
    add_new(result.diagnostics, emitted.diagnostics)
    result.diagnostics = sorted(set(result.diagnostics))
    return Emitted() if result.diagnostics else emitted


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


def compile_to_dir(root: Path, out: Path, *, fmt: str = "yaml", revision: str | None = None,
                   cache_dir: Path | None = None, jobs: int | None = None,
                   scanning: Any = None, read: ReadTree | None = None) -> DirCompile:
    """``pincompile compile ROOT --out-dir OUT``: compile and write OUT.

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
    from pincompile.incremental.stored import read_snapshot, state_of, write_snapshot
    from pincompile.source.treescan import scan_tree

    revision = revision or git_revision(root)
    store = Store(cache_dir) if cache_dir is not None else None
    compiler = Compiler(store, remember=False)
    if read is not None and store is None:
        compiler.jobs = jobs = jobs or cpus()
        return _full_compile(compiler, out, read.files, revision=revision, fmt=fmt,
                             valid_for=None, key="", read=read)
    # unchanged files (by their stat) are not read
    scan = scanning.result() if scanning is not None else scan_tree(root, store)
    walked = scan.walked
    valid_for = incremental.snapshot_key(revision, fmt)
    key = hashlib.sha256(f"snapshot\0{root.resolve()}\0{out.resolve()}".encode()).hexdigest()
    prev = read_snapshot(store, key) if store is not None else None
    if (isinstance(prev, incremental.Snapshot) and prev.valid_for == valid_for and out.is_dir()
            and marker_id(out) == prev.id and prev.listed_in(out)):
        outcome = incremental.update(
            prev, valid_for, scan.digests,
            lambda name, digest: state_of(compiler, scan, name, digest), walked,
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
                write_snapshot(store, key, outcome.snapshot)
            return DirCompile(outcome=outcome, written=len(outcome.write))
    files = scan.files()
    compiler.jobs = jobs or cpus()
    return _full_compile(compiler, out, files, revision=revision, fmt=fmt, valid_for=valid_for,
                         key=key, loaded=walked)


def _full_compile(compiler: Compiler, out: Path, files: list[tuple[str, bytes]], *,
                  revision: str, fmt: str, valid_for: Any, key: str,
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
        expand_result(result, None, fmt=None, revision=revision, jobs=jobs)
        return done
    if not result.catalog.entries:  # no specs: a usage error, nothing to write
        return done

    def fill(directory: Path) -> str | None:
        emitted = expand_result(result, directory, fmt=fmt, revision=revision, jobs=jobs)
        if result.diagnostics:
            return None
        done.written = len(emitted.rows) + 1
        done.objects = len(emitted.rows)
        done.clusters = len({r.cluster for r in emitted.rows})
        if store is None:
            return tree_id(emitted.signature)
        states = [compiler.states[name] for name, _ in files]
        snaps.append(incremental.snapshot(valid_for, states, result, fmt,
                                          emitted.sources(result.catalog), emitted.placement))
        return snaps[0].id

    snaps: list[incremental.Snapshot] = []
    if replace_tree(out, fill) and snaps and store is not None:
        snaps[0].seen_in(out)
        store.write(key, snaps[0])
    return done
