"""Walk a spec tree and name every file's content digest, reading only files that changed.

Like git's index, a :class:`StatIndex` kept in the cache remembers per file its ``stat``
(size, mtime, ctime, inode, device, mode) and the content digest it had; a file whose
``stat`` is unchanged is not read or hashed again. A file changed within the same
timestamp tick as the index was taken would keep its ``stat`` (git's "racily clean" case),
so an entry whose mtime or ctime is not at least :data:`RACY_MARGIN_NS` older than the walk
that recorded it is never trusted: that file is read and hashed again next time.

The walk finds the same files, in the same order, with the same warnings and errors as
:func:`pincompile.source.loader.read_tree`; only regular files are read.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pincompile.diagnostics import Diagnostic
from pincompile.source.filecache import Store, code_digest, file_digest
from pincompile.source.loader import (
    LoadResult,
    add_walk_problem,
    iter_yaml_files,
    read_regular_file,
)

if TYPE_CHECKING:
    from pincompile.forked import Forked

RACY_MARGIN_NS = 2_000_000_000
"""How much older than the walk a file's timestamps must be for its entry to be trusted
(covers filesystems with one- or two-second timestamps and coarse kernel clocks)."""
REWRITE_AFTER = 32
"""The index is stored again once a walk had to read more files than this (or had none):
reading a few files again costs less than storing 10,000 entries."""

Sig = tuple[int, int, int, int, int, int]


@dataclass
class StatIndex:
    """File name → (stat, content digest) of the files a walk may trust next time."""

    entries: dict[str, tuple[Sig, str]] = field(default_factory=dict)


@dataclass
class Scan:
    """One walk of a tree: every file's digest in load order, what the walk reported, and
    the content of the files it had to read."""

    digests: list[tuple[str, str]]
    walked: LoadResult
    paths: dict[str, str | Path]
    raw: dict[str, bytes]
    reread: int = 0
    """How many files were read and hashed (the rest were known by their stat)."""

    def read(self, name: str) -> bytes | None:
        """The content of file ``name`` (read now unless the walk read it)."""
        if name in self.raw:
            return self.raw[name]
        path = self.paths.get(name)
        if path is None:
            return None
        return read_regular_file(name, path, LoadResult())

    def files(self) -> tuple[list[tuple[str, bytes]], list[str]]:
        """Every file as (name, content), in load order, and its content digest (a file
        read now is hashed again: it may have changed since the walk; a file that can no
        longer be read is left out)."""
        files, digests = [], []
        for name, known in self.digests:
            raw = self.read(name)
            if raw is not None:
                files.append((name, raw))
                digests.append(known if name in self.raw else file_digest(name, raw))
        return files, digests


def index_key(root: Path) -> str:
    """The cache key of ``root``'s stat index (digests depend on pincompile's code)."""
    return hashlib.sha256(f"stat-index\0{code_digest()}\0{root.resolve()}".encode()
                          ).hexdigest()


def scan_tree(root: Path, store: Store | None) -> Scan:
    """Walk ``root`` (or the one file ``root``); with ``store``, trust and keep a stat index
    there."""
    key = index_key(root) if store is not None else ""
    known = store.read(key) if store is not None else None
    entries = known.entries if isinstance(known, StatIndex) else {}
    started = time.time_ns()
    trusted_before = started - RACY_MARGIN_NS
    walked = LoadResult()
    scan = Scan([], walked, {}, {})
    keep: dict[str, tuple[Sig, str]] = {}
    walk: Iterable[tuple[str, str | Path | None, Diagnostic | None]]
    walk = iter_yaml_files(root) if root.is_dir() else [(root.name, root, None)]
    for rel, path, problem in walk:
        if problem is not None:
            add_walk_problem(walked, problem)
            continue
        assert path is not None
        try:
            info = os.stat(path)
        except OSError:
            info = None
        sig = (None if info is None or not stat.S_ISREG(info.st_mode) else
               (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev,
                info.st_mode))
        entry = entries.get(rel)
        if sig is not None and entry is not None and entry[0] == sig:
            digest = entry[1]
        else:
            raw = read_regular_file(rel, path, walked)  # reports what is not a regular file
            if raw is None:
                continue
            digest = file_digest(rel, raw)
            scan.raw[rel] = raw
            scan.reread += 1
        scan.paths[rel] = path
        scan.digests.append((rel, digest))
        if sig is not None and sig[1] < trusted_before and sig[2] < trusted_before:
            keep[rel] = (sig, digest)
    if store is not None and (scan.reread > REWRITE_AFTER or not entries) and keep != entries:
        store.write(key, StatIndex(keep))
    return scan


def scan_ahead(root: Path, cache_dir: Path | None) -> Forked[Scan]:
    """:func:`scan_tree` of ``root`` (with the store at ``cache_dir``) started in a forked
    process, so that this one goes on (importing the compiler: a one-app compile of
    10,000 files then waits for neither alone); its ``result()`` is the :class:`Scan`."""
    from pincompile.forked import Forked

    return Forked(_scan, root, cache_dir)


def _scan(root: Path, cache_dir: Path | None) -> Scan:
    return scan_tree(root, Store(cache_dir) if cache_dir is not None else None)
