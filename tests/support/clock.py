"""A clock that moves only when the test says so.

Hand a :class:`FakeClock` to what takes a :class:`reconciler.clock.Clock` (serve's
coalescer and worker, the Lease electors, the status follower, the restarts' claims
(:class:`reconciler.api.actions.Operations`), a pass's wait for health), then
:meth:`~FakeClock.advance` it. The threads waiting on it wake to the new time;
:meth:`~FakeClock.settle` returns once every one of them has read the new time and is
waiting again, so "nothing happened" is proven after the time passed, not by sleeping.
"""

from __future__ import annotations

import threading
import time

from reconciler.clock import Clock

#: real seconds a waiting thread sleeps between looks at the fake time
SLICE = 0.005


class FakeClock(Clock):
    """Fake time: epoch seconds from ``start``; :meth:`sleep` moves it at once."""

    def __init__(self, start: float = 1_900_000_000.0) -> None:
        self._epoch = start
        self._elapsed = 0.0
        self._generation = 0
        self._changed = threading.Condition()
        self._seen: dict[int, int] = {}
        """The generation of the time each thread read last."""
        self._waiting: dict[int, int] = {}
        """Threads waiting now, with the generation of the time they last read."""
        self._waiters: set[int] = set()
        """Threads that have waited on this clock."""

    def _read(self) -> None:
        with self._changed:
            self._seen[threading.get_ident()] = self._generation

    def __call__(self) -> float:
        self._read()
        return self._epoch + self._elapsed

    def monotonic(self) -> float:
        self._read()
        return self._elapsed

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass."""
        with self._changed:
            self._elapsed += seconds
            self._generation += 1
            self._changed.notify_all()

    def sleep(self, seconds: float) -> None:
        """Time passes at once (for code that waits in the test's own thread)."""
        self.advance(seconds)

    def _slice(self, wait: threading.Condition | threading.Event) -> None:
        """Wait one real slice, counted as waiting at the time this thread read last."""
        ident = threading.get_ident()
        with self._changed:
            self._waiting[ident] = self._seen.get(ident, -1)
            self._waiters.add(ident)
            self._changed.notify_all()
        try:
            wait.wait(SLICE)
        finally:
            with self._changed:
                self._waiting.pop(ident, None)

    def wait(self, cond: threading.Condition, seconds: float | None) -> None:
        """One slice: the caller, as after any condition wait, reads the time again."""
        self._slice(cond)

    def wait_event(self, event: threading.Event, seconds: float) -> bool:
        deadline = self.monotonic() + seconds
        while not event.is_set() and self.monotonic() < deadline:
            self._slice(event)
        return event.is_set()

    def settle(self, timeout: float = 10.0, threads: int = 1) -> None:
        """Return once at least ``threads`` threads have waited on this clock and every
        one of them has read the current time and waits again (a thread busy with what
        the time made due is waited for)."""
        end = time.monotonic() + timeout
        with self._changed:
            while True:
                alive = {t.ident for t in threading.enumerate()}
                waiters = (self._waiters & alive) - {threading.get_ident()}
                if len(waiters) >= threads and all(
                        self._waiting.get(i) == self._generation for i in waiters):
                    return
                if time.monotonic() > end:
                    raise AssertionError(f"threads did not settle within {timeout:g}s")
                self._changed.wait(SLICE)
