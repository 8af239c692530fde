"""Run a function in a forked process while this one goes on, and take its result later.

A compile's stages hold large, read-only inputs (the loaded files, the catalog, the plan).
A forked child inherits them for free (nothing is copied through a pipe on the way in);
only its result is pickled back (or, with :class:`ForkedBatches`, each batch of it as soon
as it is made). Used where a compile of a large tree splits independent
work over the CPUs: loading files (:mod:`pincompile.pipeline`), checks while placement
runs, and expansion and writing (:mod:`pincompile.emit.parallel`).
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import pickle
import traceback
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def cpus() -> int:
    """The CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 1)


def _start(target: Callable[..., None], *args: Any) -> tuple[Any, Any]:
    """A forked process running ``target(writer, *args)``: the reading end of the pipe it
    writes to, and the process."""
    gc.freeze()  # the child shares this process's objects: no collection there touches them
    context = multiprocessing.get_context("fork")
    reader, writer = context.Pipe(duplex=False)
    process = context.Process(target=target, args=(writer, *args), daemon=True)
    try:
        process.start()
    finally:
        gc.unfreeze()
        writer.close()
    return reader, process


def _outcome(kind: str, value: Any) -> Any:
    """What a child answered: its value, or its failure raised here (an OSError as it was
    raised there, anything else as a RuntimeError with the child's traceback)."""
    if kind == "ok":
        return value
    if isinstance(value, OSError):
        raise value
    raise RuntimeError(f"a worker process failed: {value}")


class Forked(Generic[T]):
    """``function(*args)`` running in a child process; :meth:`result` waits for it."""

    def __init__(self, function: Callable[..., T], *args: Any) -> None:
        self._answer: tuple[str, Any] | None = None
        self._reader, self._process = _start(_child, function, args)

    def result(self) -> T:
        """The function's return value (waited for once, then kept); its OSError is raised
        here as it was raised there, any other failure as a RuntimeError with the child's
        traceback."""
        if self._answer is None:
            try:
                self._answer = self._reader.recv()
            except EOFError:
                self._answer = ("failed", "ended without an answer "
                                f"(exit code {self._process.exitcode})")
            self._process.join()
            self._reader.close()
        return _outcome(*self._answer)


class ForkedBatches:
    """``function(*args)``, which yields batches, running in a child process that hands
    over each batch as soon as it is made; :meth:`next` takes them in order.

    The child appends each pickled batch to an anonymous in-memory file and sends only
    its place through the pipe, so it never waits for this process to read; this process
    reads and unpickles each batch when it takes it."""

    def __init__(self, function: Callable[..., Iterable[Any]], *args: Any) -> None:
        self._done = False
        self._file = _anonymous_file()
        self._reader, self._process = _start(_child_batches, self._file, function, args)

    def next(self) -> Any:
        """The next batch, or None after the last; raises as :meth:`Forked.result` does
        when the child failed."""
        if self._done:
            return None
        try:
            kind, value = self._reader.recv()
        except EOFError:
            kind, value = "failed", f"ended without an answer (exit code {self._process.exitcode})"
        if kind == "batch":
            offset, size = value
            return pickle.loads(os.pread(self._file, size, offset))
        self._done = True
        self._process.join()
        self._reader.close()
        os.close(self._file)
        return _outcome(kind, value)


def _anonymous_file() -> int:
    """A file descriptor of a file with no name (in memory where the system allows)."""
    if hasattr(os, "memfd_create"):
        try:
            return os.memfd_create("pincompile-batches", os.MFD_CLOEXEC)
        except OSError:
            pass
    import tempfile

    return os.dup(tempfile.TemporaryFile().fileno())


def _child_batches(writer: Any, file: int, function: Callable[..., Iterable[Any]],
                   args: tuple[Any, ...]) -> None:
    answer: tuple[str, Any] = ("ok", None)
    offset = 0
    try:
        for batch in function(*args):
            data = memoryview(pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL))
            start, size = offset, len(data)
            while data:
                written = os.pwrite(file, data, offset)
                data, offset = data[written:], offset + written
            writer.send(("batch", (start, size)))
    except OSError as exc:
        answer = ("oserror", exc)
    except BaseException:
        answer = ("failed", traceback.format_exc(limit=8))
    writer.send(answer)
    writer.close()


def _child(writer: Any, function: Callable[..., Any], args: tuple[Any, ...]) -> None:
    try:
        answer: tuple[str, Any] = ("ok", function(*args))
    except OSError as exc:
        answer = ("oserror", exc)
    except BaseException:  # reported by the parent, never silently lost
        answer = ("failed", traceback.format_exc(limit=8))
    writer.send(answer)
    writer.close()
