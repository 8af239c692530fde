"""Expand, serialize and write a compiled tree, split over worker processes.

``pincompile compile ROOT --out-dir OUT`` spends most of a large compile expanding specs into
objects, serializing them and writing one file per object. Each of those is independent
per workload, so :func:`emit` runs ``jobs`` processes (forked after placement: the catalog
and the plan are inherited, never copied through a pipe) that draw chunks of workloads
from one shared counter until none are left, so that they finish together. Every process
expands its chunks one workload at a time, writes each object's file into a fresh
directory and keeps only a row per object (its path, source and content digest), so no
process holds the whole output in memory (for ``-o -`` the rows carry the text, to be
printed as one stream; ``validate`` serializes nothing), and reports an object the API
server would refuse as too large (measured on the text written). The parent checks the rows of all
processes for two specs generating the same object, exactly as
:func:`pincompile.expand.expand_all` does, and reports every diagnostic; the caller swaps
the directory in only when there are none. The bytes written do not depend on ``jobs``.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from pincompile.catalog import Catalog, Entry
from pincompile.diagnostics import Diagnostic, add_new
from pincompile.emit.output import PLACEMENT_FILE, manifest_path, serialize, to_json, too_large
from pincompile.emit.signature import digest as content_digest
from pincompile.emit.signature import tree_sig
from pincompile.expand import expand_part, find_duplicates
from pincompile.forked import Forked
from pincompile.manifest import Manifest

if TYPE_CHECKING:
    from pincompile.pipeline import Result
    from pincompile.placement import Plan

SMALL = 50
"""Specs per process below which fewer processes are used (a fork costs more than it
saves on a small tree)."""


class Row(NamedTuple):
    """One generated object: its output path, source spec as (file, document index)
    (``("", 0)`` for a platform object), kind, name, cluster, content digest and (when
    :func:`emit` writes no directory) its text. Rows sort by path, then by source."""

    path: str
    order: tuple[str, int]
    kind: str
    name: str
    cluster: str
    digest: bytes
    text: str = ""

    @property
    def source(self) -> tuple[str, int] | None:
        """The source spec, or None for a platform object."""
        return self.order if self.order[0] else None


@dataclass
class Emitted:
    """What :func:`emit` generated."""

    rows: list[Row] = field(default_factory=list)
    """Every object's row, sorted by path (one per path: the first, as in a compile)."""
    diagnostics: list[Diagnostic] = field(default_factory=list)
    placement: bytes = b""
    """Digest of the ``placement.json`` written (none without a directory)."""
    signature: int = 0
    """:func:`~pincompile.emit.signature.tree_sig` of every file written, ``placement.json``
    included (0 without a directory)."""

    def sources(self, catalog: Catalog) -> list[tuple[str, Entry[Any] | None, bytes]]:
        """(path, source spec, digest) of every object, for a snapshot."""
        entries = _entries(catalog)
        return [(r.path, entries.get(r.source) if r.source else None, r.digest)
                for r in self.rows]


@dataclass
class _Job:
    directory: Path | None
    catalog: Catalog
    plan: Plan
    revision: str
    fmt: str | None
    digest: Callable[[str | bytes], bytes]
    tickets: Callable[[], int]
    """The next chunk to do (shared by every process; see :func:`expand_part`), or
    :data:`PLACEMENT_TICKET` for ``placement.json``."""


@dataclass
class _Share:
    """What one process generated."""

    rows: list[Row]
    diagnostics: list[Diagnostic]
    placement: bytes = b""
    signature: int = 0


PLACEMENT_TICKET = 0
"""The ticket that stands for writing ``placement.json`` (a directory only); chunk ``c``
of :func:`~pincompile.expand.expand_part` is ticket ``c + 1``."""


def expand_result(result: Result, directory: Path | None, *, fmt: str | None, revision: str,
                  jobs: int) -> Emitted:
    """Expand (and serialize as ``fmt``, and write under ``directory``) a compile checked
    and placed by ``result``; its problems join the result's diagnostics. With earlier
    diagnostics the objects are only generated for their problems (every error is reported
    at once) and no rows are returned."""
    if result.plan is None:
        return Emitted()
    failed = bool(result.diagnostics)
    emitted = emit(None if failed else directory, result.catalog, result.plan,
                   revision=revision, fmt=None if failed else fmt, digest=content_digest,
                   jobs=jobs)
    add_new(result.diagnostics, emitted.diagnostics)
    result.diagnostics = sorted(set(result.diagnostics))
    return Emitted() if result.diagnostics else emitted


def emit(directory: Path | None, catalog: Catalog, plan: Plan, *, revision: str,
         fmt: str | None,
         digest: Callable[[str | bytes], bytes], jobs: int = 1) -> Emitted:
    """Every object of the placed catalog, serialized as ``fmt``: written under
    ``directory`` (with ``placement.json``), or kept as text on the rows when it is None;
    ``digest(text)`` names each object's content (the same for its UTF-8 bytes). With
    ``fmt`` None nothing is serialized (``validate``: the rows and the problems alone)."""
    jobs = max(1, min(jobs, len(catalog.entries) // SMALL or 1))
    job = _Job(directory, catalog, plan, revision, fmt, digest, _tickets(jobs))
    children = [Forked(_part, job) for _ in range(1, jobs)]
    shares = [_part(job)]
    shares.extend(child.result() for child in children)
    rows = sorted(r for share in shares for r in share.rows)
    found = [d for share in shares for d in share.diagnostics]
    if len({r.path for r in rows}) < len(rows):  # two specs generate the same object
        found.extend(find_duplicates(
            [(r.path, r.kind, r.name, r.cluster, r.source) for r in rows], _entries(catalog)))
        first: dict[str, Row] = {}
        for row in rows:
            first.setdefault(row.path, row)
        rows = list(first.values())
    signature = 0
    for share in shares:
        signature ^= share.signature
    placement = next((share.placement for share in shares if share.placement), b"")
    return Emitted(rows, sorted(set(found)), placement, signature)


def _tickets(jobs: int) -> Callable[[], int]:
    """A counter that hands out 0, 1, 2, ... once each, shared by ``jobs`` processes
    (forked after this call)."""
    if jobs == 1:
        return itertools.count().__next__
    shared = multiprocessing.get_context("fork").Value("q", 0)

    def take() -> int:
        with shared.get_lock():
            ticket = int(shared.value)
            shared.value = ticket + 1
        return ticket

    return take


def _entries(catalog: Catalog) -> dict[tuple[str, int], Entry[Any]]:
    return {(e.file, e.doc.index): e for e in catalog.entries}


def _part(job: _Job) -> _Share:
    """Expand, serialize and write the chunks this process draws; its rows and
    diagnostics (and the digest of ``placement.json`` when it drew that ticket)."""
    share = _Share([], [])
    made: set[str] = set()
    manifests, share.diagnostics = expand_part(job.catalog, job.plan, revision=job.revision,
                                               chunks=_chunks(job, share))
    share.rows = [_row(job, m, made, share.diagnostics) for m in manifests]
    if job.directory is not None:
        share.signature ^= tree_sig([(r.path, r.digest) for r in share.rows])
    return share


def _chunks(job: _Job, share: _Share) -> Iterator[int]:
    """The chunks this process draws; writes ``placement.json`` when it draws that."""
    while True:
        ticket = job.tickets()
        if ticket != PLACEMENT_TICKET:
            yield ticket - 1
        elif job.directory is not None:
            text = to_json(job.plan.to_json())
            data = text.encode("utf-8", "surrogateescape")
            _write(f"{job.directory}/{PLACEMENT_FILE}", data)
            share.placement = job.digest(data)
            share.signature ^= tree_sig([(PLACEMENT_FILE, share.placement)])


def _row(job: _Job, m: Manifest, made: set[str], found: list[Diagnostic]) -> Row:
    """``m``'s row (written, or with its text); an object too large goes to ``found``."""
    order = (m.source.file, m.source.doc.index) if m.source is not None else ("", 0)
    if job.fmt is None:
        _check_size(m, None, found)
        return Row(m.relpath, order, m.kind, m.name, m.cluster, b"")
    path = manifest_path(m, job.fmt)
    text = serialize(m.obj, job.fmt)
    _check_size(m, text, found)
    if job.directory is None:
        return Row(path, order, m.kind, m.name, m.cluster, job.digest(text), text)
    folder = path.rpartition("/")[0]
    if folder not in made:
        os.makedirs(job.directory / folder, exist_ok=True)
        made.add(folder)
    data = text.encode("utf-8", "surrogateescape")
    _write(f"{job.directory}/{path}", data)
    return Row(path, order, m.kind, m.name, m.cluster, job.digest(data))


def _check_size(m: Manifest, text: str | None, found: list[Diagnostic]) -> None:
    problem = too_large(m, text)
    if problem is not None:
        found.append(problem)


def _write(path: str, data: bytes) -> None:
    """Write ``data`` to the new file ``path``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
