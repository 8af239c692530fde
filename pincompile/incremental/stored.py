"""Snapshots in the cache: stored whole, then as the changes of each update since, and a
changed file's state read again by its digest."""

from __future__ import annotations

import hashlib
import os
from typing import TYPE_CHECKING, Any

from pincompile.source.filecache import FileState, Store, file_digest

if TYPE_CHECKING:
    from pincompile.compiler import Compiler


def state_of(compiler: Compiler, scan: Any, name: str, digest: str) -> FileState | None:
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
    return compiler.file_state(name, raw, digest)


DELTA_LIMIT = 2000
"""Files and units an update may store as changes to the stored snapshot; beyond that, the
whole snapshot is stored again."""


def _delta_key(key: str) -> str:
    return hashlib.sha256(f"delta\0{key}".encode()).hexdigest()


def read_snapshot(store: Store, key: str) -> Any:
    """The snapshot stored under ``key``, with the changes stored since applied."""
    from pincompile import incremental

    base = store.read(key)
    if not isinstance(base, incremental.Snapshot) or not incremental.complete(base):
        return None  # another version's snapshot
    delta = store.read(_delta_key(key))
    if isinstance(delta, incremental.Delta):
        return incremental.apply_delta(base, delta) or base
    return base


def write_snapshot(store: Store, key: str, snap: Any) -> None:
    """Store an updated snapshot: as its changes since the stored one, or whole."""
    if snap.delta is not None and snap.delta.size() <= DELTA_LIMIT:
        store.write(_delta_key(key), snap.delta)
        return
    snap.delta, snap.token = None, os.urandom(16).hex()  # earlier changes no longer apply
    store.write(key, snap)
