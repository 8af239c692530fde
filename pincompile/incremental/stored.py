"""Snapshots in the cache: stored whole, then as the changes of each update since, and a
changed file's state read again by its digest."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable

from pincompile.incremental.snapshots import Delta, Snapshot, apply_delta, complete
from pincompile.source.filecache import FileState, Store, file_digest
from pincompile.source.treescan import Scan

FileStateOf = Callable[[str, bytes, str], FileState]
"""``(name, content, digest)`` → that file loaded and parsed (e.g.
:meth:`pincompile.compiler.Compiler.file_state`)."""


def state_of(store: Store | None, scan: Scan, file_state: FileStateOf, name: str,
             digest: str) -> FileState | None:
    """File ``name`` loaded and parsed, as it was when ``scan`` named its ``digest``: from
    ``store`` by that digest, else read again and given to ``file_state`` (None when it
    changed since: a full compile then reads everything again)."""
    if store is not None:
        stored = store.get(digest)
        if stored is not None and stored.name == name:
            return stored
    raw = scan.read(name)
    if raw is None or file_digest(name, raw) != digest:
        return None
    return file_state(name, raw, digest)


DELTA_LIMIT = 2000
"""Files and units an update may store as changes to the stored snapshot; beyond that, the
whole snapshot is stored again."""


def _delta_key(key: str) -> str:
    return hashlib.sha256(f"delta\0{key}".encode()).hexdigest()


def read_snapshot(store: Store, key: str) -> Snapshot | None:
    """The snapshot stored under ``key``, with the changes stored since applied."""
    base = store.read(key)
    if not isinstance(base, Snapshot) or not complete(base):
        return None  # another version's snapshot
    delta = store.read(_delta_key(key))
    if isinstance(delta, Delta):
        return apply_delta(base, delta) or base
    return base


def write_snapshot(store: Store, key: str, snap: Snapshot) -> None:
    """Store an updated snapshot: as its changes since the stored one, or whole."""
    if snap.delta is not None and snap.delta.size() <= DELTA_LIMIT:
        store.write(_delta_key(key), snap.delta)
        return
    snap.delta, snap.token = None, os.urandom(16).hex()  # earlier changes no longer apply
    store.write(key, snap)
