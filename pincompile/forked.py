"""Run a function in a forked process while this one goes on, and take its result later.

A compile's stages hold large, read-only inputs (the loaded files, the catalog, the plan).
A forked child inherits them for free (nothing is copied through a pipe on the way in);
only its result is pickled back. Used where a compile of a large tree splits independent
work over the CPUs: loading files (:mod:`pincompile.pipeline`), checks while placement
runs, and expansion and writing (:mod:`pincompile.emit`).
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import traceback
from collections.abc import Callable
from typing import Any


def cpus() -> int:
    """The CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 1)


class Forked:
    """``function(*args)`` running in a child process; :meth:`result` waits for it."""

    def __init__(self, function: Callable[..., Any], *args: Any) -> None:
        self._answer: tuple[str, Any] | None = None
        gc.freeze()  # the child shares this process's objects: no collection there touches them
        context = multiprocessing.get_context("fork")
        self._reader, writer = context.Pipe(duplex=False)
        self._process = context.Process(target=_child, args=(writer, function, args),
                                        daemon=True)
        try:
            self._process.start()
        finally:
            gc.unfreeze()
            writer.close()

    def result(self) -> Any:
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
        kind, value = self._answer
        if kind == "ok":
            return value
        if isinstance(value, OSError):
            raise value
        raise RuntimeError(f"a worker process failed: {value}")


def _child(writer: Any, function: Callable[..., Any], args: tuple[Any, ...]) -> None:
    try:
        answer: tuple[str, Any] = ("ok", function(*args))
    except OSError as exc:
        answer = ("oserror", exc)
    except BaseException:  # reported by the parent, never silently lost
        answer = ("failed", traceback.format_exc(limit=8))
    writer.send(answer)
    writer.close()
