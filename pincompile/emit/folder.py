"""The output folder: ``pincompile compile ROOT --out-dir OUT`` expands, serializes and writes
every object (in one process per CPU), or rewrites only the changed apps' files against
the snapshot of the last clean compile kept in the cache."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pincompile.compiler import CachedTree, Compiler
from pincompile.emit.signature import tree_id
from pincompile.pipeline import Result
from pincompile.source.filecache import Store
from pincompile.source.gitsource import git_revision
from pincompile.source.readahead import ReadTree, read_ahead

if TYPE_CHECKING:
    from pincompile.emit.parallel import Row
    from pincompile.forked import Forked
    from pincompile.incremental.snapshots import Outcome, Snapshot
    from pincompile.source.treescan import Scan


def compile_rendered(root: Path, *, fmt: str = "yaml", revision: str | None = None,
                     cache_dir: Path | None = None, jobs: int | None = None,
                     read: ReadTree | None = None) -> tuple[Result, list[Row]]:
    """Compile ``root`` and serialize every object as ``fmt``, in ``jobs`` processes (see
    :mod:`pincompile.emit.parallel`): the result (without objects) and one
    :class:`~pincompile.emit.parallel.Row` per object, sorted by path, its text included (none when
    the result has diagnostics).
    ``read``: ``root`` as :func:`~pincompile.source.readahead.read_ahead` read it (with the same
    ``cache_dir`` and ``jobs``)."""
    from pincompile.emit.parallel import expand_result
    from pincompile.forked import cpus

    jobs = jobs or cpus()
    read = read or read_ahead(root, cache_dir, jobs)
    revision = revision or git_revision(root)
    compiler = Compiler(Store(cache_dir) if cache_dir is not None else None, remember=False,
                        jobs=jobs)
    result = compiler.compile(read=read, revision=revision, expand=False)
    return result, expand_result(result, None, fmt=fmt, revision=revision, jobs=jobs).rows


@dataclass
class DirCompile:
    """What :func:`compile_to_dir` did: a full compile (``result``) or an incremental one
    (``outcome``); an incremental compile that found errors gives a ``result`` holding
    them alone (what a full compile reports)."""

    result: Result | None = None
    outcome: Outcome | None = None
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
                   scanning: Forked[Scan] | None = None, read: ReadTree | None = None
                   ) -> DirCompile:
    """``pincompile compile ROOT --out-dir OUT``: compile and write OUT.

    With ``cache_dir``, a snapshot of the last clean compile of ROOT into OUT is kept there;
    when only app files changed since (and OUT holds what that compile wrote: its marker
    names the same content, and it has the same file names), only the changed apps are
    compiled again and only changed output files are written (see
    :class:`~pincompile.compiler.CachedTree`). Otherwise the objects are expanded and written
    by ``jobs`` processes (default: one per CPU; see :mod:`pincompile.emit.parallel`); the
    result then holds no objects. A file edited by hand inside OUT is not noticed (OUT is
    pincompile's: a full compile, or ``--no-cache``, rewrites it). Nothing is written when
    the result has diagnostics. ``scanning``: ROOT's walk already started by
    :func:`~pincompile.source.treescan.scan_ahead` (with the same ``cache_dir``); or, without a
    cache (nothing to reuse, so no walk by ``stat``), ``read``: ROOT as
    :func:`~pincompile.source.readahead.read_ahead` read it (its files already being loaded).
    """
    from pincompile.emit.output import PLACEMENT_FILE, marker_id, update_tree
    from pincompile.forked import cpus

    revision = revision or git_revision(root)
    jobs = jobs or cpus()
    store = Store(cache_dir) if cache_dir is not None else None
    if read is not None and store is None:
        compiler = Compiler(None, remember=False, jobs=jobs)
        result = compiler.compile(read=read, revision=revision, expand=False)
        return _write_all(result, out, fmt=fmt, revision=revision, jobs=jobs)
    tree = CachedTree.walk(root, store, f"snapshot\0{root.resolve()}\0{out.resolve()}",
                           revision=revision, fmt=fmt, jobs=jobs, scanning=scanning)
    prev = tree.last()
    if (prev is not None and out.is_dir() and marker_id(out) == prev.id
            and prev.listed_in(out)):
        found = tree.update(prev, fmt, read_placement=lambda: _read_bytes(out / PLACEMENT_FILE),
                            placement_unchanged=prev.placement_unchanged(out))
        if isinstance(found, Result):  # the changed apps' errors; nothing written
            return DirCompile(result=found)
        if found is not None:
            update_tree(out, found.write, found.remove, found.snapshot.id)
            if found.snapshot is not prev:  # else nothing changed
                found.snapshot.seen_in(out)
                tree.keep(found.snapshot)
            return DirCompile(outcome=found, written=len(found.write))
    return _write_all(tree.compile_all(), out, fmt=fmt, revision=revision, jobs=jobs,
                      tree=tree if store is not None else None)


def _write_all(result: Result, out: Path, *, fmt: str, revision: str, jobs: int,
               tree: CachedTree | None = None) -> DirCompile:
    """Replace OUT with every object of a checked and placed ``result``; with ``tree``,
    keep the snapshot of this compile in its cache."""
    from pincompile.emit.output import replace_tree
    from pincompile.emit.parallel import expand_result

    done = DirCompile(result=result)
    if result.diagnostics:  # nothing is written; expansion still reports its problems
        expand_result(result, None, fmt=None, revision=revision, jobs=jobs)
        return done
    if not result.catalog.entries:  # no specs: a usage error, nothing to write
        return done
    snaps: list[Snapshot] = []

    def fill(directory: Path) -> str | None:
        emitted = expand_result(result, directory, fmt=fmt, revision=revision, jobs=jobs)
        if result.diagnostics:
            return None
        done.written = len(emitted.rows) + 1
        done.objects = len(emitted.rows)
        done.clusters = len({r.cluster for r in emitted.rows})
        if tree is None:
            return tree_id(emitted.signature)
        snaps.append(tree.snapshot(result, fmt, emitted))
        return snaps[0].id

    if replace_tree(out, fill) and tree is not None and snaps:
        snaps[0].seen_in(out)
        tree.keep(snaps[0])
    return done
