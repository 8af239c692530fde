"""Expand, serialize and write a compiled tree, split over worker processes.

``pincompile compile ROOT -o OUT`` spends most of a large compile expanding specs into
objects, serializing them and writing one file per object. Each of those is independent
per workload, so :func:`emit` splits the placed workloads over ``jobs`` processes (forked
after placement: the catalog and the plan are inherited, never copied through a pipe).
Every process expands its share one workload at a time, writes each object's file into a
fresh directory and keeps only a row per object (its path, source and content digest), so
no process holds the whole output in memory (for ``-o -`` the rows carry the text, to be
printed as one stream; ``validate`` serializes nothing). The parent checks the rows of all processes
for two specs generating the same object, exactly as :func:`pincompile.expand.expand_all`
does, and reports every diagnostic; the caller swaps the directory in only when there
are none. The bytes written do not depend on ``jobs``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pincompile.catalog import Catalog, Entry
from pincompile.diagnostics import Diagnostic
from pincompile.expand import expand_part, find_duplicates
from pincompile.forked import Forked
from pincompile.manifest import Manifest
from pincompile.output import PLACEMENT_FILE, manifest_path, serialize, to_json

SMALL = 50
"""Specs per process below which fewer processes are used (a fork costs more than it
saves on a small tree)."""


@dataclass
class Row:
    """One generated object: its output path, source spec ((file, document index), or None
    for a platform object), kind, name, cluster, content digest and (when :func:`emit`
    writes no directory) its text."""

    path: str
    source: tuple[str, int] | None
    kind: str
    name: str
    cluster: str
    digest: bytes
    text: str = ""


@dataclass
class Emitted:
    """What :func:`emit` generated."""

    rows: list[Row] = field(default_factory=list)
    """Every object's row, sorted by path (one per path: the first, as in a compile)."""
    diagnostics: list[Diagnostic] = field(default_factory=list)
    placement: bytes = b""
    """Digest of the ``placement.json`` written (none without a directory)."""

    def sources(self, catalog: Catalog) -> list[tuple[str, Entry[Any] | None, bytes]]:
        """(path, source spec, digest) of every object, for a snapshot."""
        entries = _entries(catalog)
        return [(r.path, entries.get(r.source) if r.source else None, r.digest)
                for r in self.rows]


@dataclass
class _Job:
    directory: Path | None
    catalog: Catalog
    plan: Any
    revision: str
    fmt: str | None
    digest: Callable[[str], bytes]
    jobs: int


def emit(directory: Path | None, catalog: Catalog, plan: Any, *, revision: str,
         fmt: str | None,
         digest: Callable[[str], bytes], jobs: int = 1) -> Emitted:
    """Every object of the placed catalog, serialized as ``fmt``: written under
    ``directory`` (with ``placement.json``), or kept as text on the rows when it is None;
    ``digest(text)`` names each object's content. With ``fmt`` None nothing is serialized
    (``validate``: the rows and the problems alone)."""
    job = _Job(directory, catalog, plan, revision, fmt, digest,
               max(1, min(jobs, len(catalog.entries) // SMALL or 1)))
    children = [Forked(_part, job, part) for part in range(1, job.jobs)]
    parts = [_part(job, 0)]
    parts.extend(child.result() for child in children)
    rows = sorted((r for rows, _, _ in parts for r in rows), key=_row_order)
    found = [d for _, diagnostics, _ in parts for d in diagnostics]
    found.extend(find_duplicates(
        [(r.path, r.kind, r.name, r.cluster, r.source) for r in rows], _entries(catalog)))
    first: dict[str, Row] = {}
    for row in rows:
        first.setdefault(row.path, row)
    placement = next((written for _, _, written in parts if written), b"")
    return Emitted(list(first.values()), sorted(set(found)), placement)


def _row_order(row: Row) -> tuple[str, str, int]:
    return (row.path, *(row.source or ("", 0)))


def _entries(catalog: Catalog) -> dict[tuple[str, int], Entry[Any]]:
    return {(e.file, e.doc.index): e for e in catalog.entries}


def _part(job: _Job, part: int) -> tuple[list[Row], list[Diagnostic], bytes]:
    """Expand, serialize and write this process's share; its rows and diagnostics. The
    process that finishes its share first also writes ``placement.json`` (it creates the
    file, the others find it there): the digest of what it wrote is the third item (else
    empty)."""
    made: set[str] = set()
    manifests, diagnostics = expand_part(job.catalog, job.plan, revision=job.revision,
                                         part=part, parts=job.jobs)
    rows = [_row(job, m, made) for m in manifests]
    if job.directory is None:
        return rows, diagnostics, b""
    try:
        fd = os.open(job.directory / PLACEMENT_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return rows, diagnostics, b""
    text = to_json(job.plan.to_json())
    _write_to(fd, text)
    return rows, diagnostics, job.digest(text)


def _row(job: _Job, m: Manifest, made: set[str]) -> Row:
    source = (m.source.file, m.source.doc.index) if m.source is not None else None
    if job.fmt is None:
        return Row(m.relpath, source, m.kind, m.name, m.cluster, b"")
    path = manifest_path(m, job.fmt)
    text = serialize(m.obj, job.fmt)
    row = Row(path, source, m.kind, m.name, m.cluster, job.digest(text))
    if job.directory is None:
        row.text = text
        return row
    folder = path.rpartition("/")[0]
    if folder not in made:
        os.makedirs(job.directory / folder, exist_ok=True)
        made.add(folder)
    _write(job.directory, path, text)
    return row


def _write(directory: Path, path: str, text: str) -> None:
    _write_to(os.open(directory / path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), text)


def _write_to(fd: int, text: str) -> None:
    """Write ``text`` to the open file ``fd`` and close it."""
    data = memoryview(text.encode("utf-8", "surrogateescape"))
    try:
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)
