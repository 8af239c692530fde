"""Read a spec tree and start loading its files in a forked process, before the compiler is
imported.

Importing the compiler (pydantic models, expansion) takes a one-shot command a noticeable
share of its time (bench/RESULTS.md). A command that walks the tree first and forks a
process loading the later files no cache holds gets that loading done meanwhile: the child
loads while this process imports and then loads and parses the first files (see
:class:`pincompile.compiler.Compiler`). This module imports nothing heavy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from pincompile.source.filecache import Store, file_digest
from pincompile.source.loader import LoadResult, load_text, read_tree

LOAD_AHEAD_MIN = 100
"""Files (not cached) below which a compile loads them all in one process."""
AHEAD_SHARE = 0.6
"""The share of the files the forked process loads. This process parses every file and
unpickles what the other one loaded, so the other gets the larger share (the shares tried
and their times are in bench/RESULTS.md, "Tuning")."""
LOADED_WHILE_IMPORTING = 250
"""About how many files a process loads in the time the compiler takes to import: the
forked process takes at least these, so that a command that started it before the
import finds them all loaded."""


@dataclass
class ReadTree:
    """A tree as read: its files in load order, their digests, what the walk reported,
    and the files being loaded ahead (name → the process loading it)."""

    files: list[tuple[str, bytes]]
    digests: list[str]
    walked: LoadResult
    ahead: dict[str, Loading]


def read_ahead(root: Path, cache_dir: Path | None, jobs: int) -> ReadTree:
    """Read ``root`` and, with ``jobs`` > 1, start loading ahead the files the cache at
    ``cache_dir`` does not hold."""
    files, walked = read_tree(root)
    digests = [file_digest(name, raw) for name, raw in files]
    store = Store(cache_dir) if cache_dir is not None else None
    cached = (lambda _name, digest: store.has(digest)) if store is not None else None
    return ReadTree(files, digests, walked, load_ahead(files, digests, jobs, cached))


def load_ahead(files: list[tuple[str, bytes]], digests: list[str], jobs: int,
               cached: Callable[[str, str], bool] | None = None) -> dict[str, Loading]:
    """With ``jobs`` > 1 and many files that ``cached(name, digest)`` says need loading:
    the later :data:`AHEAD_SHARE` of them (at least :data:`LOADED_WHILE_IMPORTING`), being
    loaded by a forked process (by name: the :class:`Loading` to take each from)."""
    if jobs < 2 or len(files) < LOAD_AHEAD_MIN:
        return {}
    cold = [(name, raw) for (name, raw), digest in zip(files, digests, strict=True)
            if cached is None or not cached(name, digest)]
    if len(cold) < LOAD_AHEAD_MIN:
        return {}
    first = round(len(cold) * (1 - AHEAD_SHARE))
    later = cold[max(0, min(first, len(cold) - LOADED_WHILE_IMPORTING)):]
    loading = Loading(later)
    return {name: loading for name, _ in later}


class Loading:
    """Files being loaded by a forked process, in order, sent back in batches of
    :data:`BATCH` as they are done (so this process takes the first ones while the
    others are still being loaded)."""

    def __init__(self, files: list[tuple[str, bytes]]) -> None:
        from pincompile.forked import ForkedBatches

        self._batches = ForkedBatches(_load_batches, files)
        self._loaded: dict[str, LoadResult] = {}

    def load(self, name: str) -> LoadResult:
        """File ``name`` as loaded there (waits for its batch; each file is taken once)."""
        while name not in self._loaded:
            batch = self._batches.next()
            if batch is None:
                raise KeyError(name)
            self._loaded.update(batch)
        return self._loaded.pop(name)


BATCH = 200
"""Files per batch a loading process sends (how long one takes to load: bench/RESULTS.md,
"Tuning")."""


def _load_batches(files: list[tuple[str, bytes]]) -> Iterator[dict[str, LoadResult]]:
    for start in range(0, len(files), BATCH):
        yield {name: load_text(name, raw) for name, raw in files[start:start + BATCH]}
