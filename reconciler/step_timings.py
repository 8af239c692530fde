"""Wall time per named step of a pass (``lastPass.steps``, serve's ``pass ... steps`` log)."""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")


class Steps:
    """Times the steps of a pass into ``seconds`` (step name -> wall seconds)."""

    def __init__(self, seconds: dict[str, float] | None = None) -> None:
        self.seconds = {} if seconds is None else seconds

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] = round(time.monotonic() - started, 3)

    def timed(self, name: str, function: Callable[..., T]) -> Callable[..., T]:
        """``function`` timed as step ``name`` (for a step run in another thread)."""
        def run(*args: Any) -> T:
            with self(name):
                return function(*args)
        return run


def steps_line(steps: dict[str, float]) -> str:
    """A pass's step timings as one log line's tail: ``queued 1.00, fetch 0.05, ...``
    (``queued``: from the newest trigger to the pass's start)."""
    return ", ".join(f"{name} {seconds:.2f}" for name, seconds in steps.items()) or "none"


class CollectorPauses:
    """Wall seconds the garbage collector has run in this process, summed (every thread
    waits while it runs: in a process holding large watch caches, a full collection walks
    every cached object)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._started = 0.0
        gc.callbacks.append(self._on)

    def _on(self, phase: str, _info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._started


COLLECTOR = CollectorPauses()
"""This process's collector pauses (a pass reports its share as its ``gc`` step)."""
