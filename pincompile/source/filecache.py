"""The compile cache: what one spec file loads and parses into, kept outside the spec tree.

Each entry is one file's :class:`FileState` (its documents, which find their positions in
the file's text when asked, its loader diagnostics, and each document parsed into a typed
spec or diagnostics), stored under a key made of the file's name and content and of
pincompile's own code (its version and a digest of its sources, so an edited or upgraded
pincompile never reads an older entry).

The cache is never trusted: a directory not owned by the user, or writable by others, is
not read; an entry whose header, key or checksum does not match (truncated, corrupt, from
another version or another file) is ignored, and the file is loaded again.
"""

from __future__ import annotations

import gc
import hashlib
import os
import pickle
import stat
import sys
import tempfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from pincompile.diagnostics import Diagnostic
from pincompile.source.loader import LoadResult

MAGIC = b"pincompile-cache\n"
ENTRY_DIR = "compile-v1"


@dataclass
class FileState:
    """One spec file, loaded and parsed: reused whenever its content is unchanged."""

    name: str
    digest: str
    loaded: LoadResult
    parsed: list[tuple[Any, list[Diagnostic]]] = field(default_factory=list)
    """Per document of ``loaded``: (catalog entry or None, diagnostics)."""


@cache
def code_digest() -> str:
    """pincompile's version and a digest of its sources: part of every key."""
    digest = hashlib.sha256(_installed_version().encode())
    package = Path(__file__).resolve().parents[1]
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _installed_version() -> str:
    """The version of the installed distribution, from its ``.dist-info`` directory's name
    (found as ``importlib.metadata`` finds it, first on ``sys.path``, without importing it:
    every warm compile would pay that; bench/RESULTS.md, "Tuning")."""
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if name.startswith("pincompile-") and name.endswith(".dist-info"):
                return name.removeprefix("pincompile-").removesuffix(".dist-info")
    return "unknown"


def file_digest(name: str, raw: bytes) -> str:
    """The key of one file's content under one name (locations name the file)."""
    digest = hashlib.sha256(code_digest().encode())
    digest.update(name.encode("utf-8", "surrogateescape") + b"\0")
    digest.update(raw)
    return digest.hexdigest()


class Store:
    """Cache entries in a directory (created on first write)."""

    def __init__(self, root: Path) -> None:
        self.root = root / ENTRY_DIR
        self._usable: bool | None = None

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.pickle"

    def usable(self) -> bool:
        """Whether the directory is ours alone (owned by us, not writable by others)."""
        if self._usable is None:
            self._usable = _private(self.root) if self.root.exists() else True
        return self._usable

    def get(self, key: str) -> FileState | None:
        """The entry stored under ``key``, or None (missing, corrupt or foreign)."""
        state = self.read(key)
        return state if isinstance(state, FileState) and state.digest == key else None

    def has(self, key: str) -> bool:
        """Whether an entry is stored under ``key`` (it may still turn out unreadable)."""
        return self.usable() and self._path(key).is_file()

    def put(self, state: FileState) -> None:
        """Store ``state`` (atomically; failures to write are ignored: it is a cache)."""
        self.write(state.digest, state)

    def read(self, key: str) -> Any:
        """The object stored under ``key``, or None (missing, corrupt or foreign)."""
        if not self.usable():
            return None
        try:
            blob = self._path(key).read_bytes()
        except OSError:
            return None
        head = MAGIC + key.encode() + b"\n"
        if not blob.startswith(head) or len(blob) < len(head) + 32:
            return None
        checksum, payload = blob[len(head):len(head) + 32], blob[len(head) + 32:]
        if hashlib.sha256(payload).digest() != checksum:
            return None
        collecting = gc.isenabled()
        gc.disable()  # a snapshot is 10^5-10^6 objects, none of them garbage yet
        try:
            return pickle.loads(payload)
        except Exception:  # anything unreadable is a miss, never an error
            return None
        finally:
            if collecting:
                gc.enable()

    def write(self, key: str, value: Any) -> None:
        """Store ``value`` under ``key`` (atomically; failures to write are ignored)."""
        if not self.usable():
            return
        path = self._path(key)
        try:
            payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
            return
        blob = MAGIC + key.encode() + b"\n" + hashlib.sha256(payload).digest() + payload
        try:
            if not self.root.exists():
                self.root.mkdir(parents=True, mode=0o700)
                self._usable = _private(self.root)
            path.parent.mkdir(mode=0o700, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
            with os.fdopen(fd, "wb") as handle:
                handle.write(blob)
            os.replace(tmp, path)
        except OSError:
            return


def _private(path: Path) -> bool:
    try:
        info = path.stat()
    except OSError:
        return False
    return info.st_uid == os.getuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
