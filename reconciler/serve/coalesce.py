"""Bursts of triggers collapse into one pass: the newest trigger wins.

Webhooks (and the resync timer, and winning a Lease) :meth:`Coalescer.offer` a
:class:`Trigger`; the single reconcile worker :meth:`Coalescer.take`\\ s one when the burst
has been quiet for ``window`` seconds (or ``max_delay`` after its first trigger, so a steady
stream of pushes cannot starve the worker). Only the newest revision survives a merge, and
since there is one worker that always fetches the branch head, a pass never applies an
older push after a newer one. Its windows are kept on the process's :class:`Clock`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace

from reconciler.clock import SYSTEM_CLOCK, Clock

PRIORITY = {"head": -1, "resync": 0, "start": 1, "leader": 2, "push": 3}


@dataclass(frozen=True)
class Trigger:
    """Why a pass should run, and the revision the newest push named (if any)."""

    reason: str
    """``push``, ``resync``, ``start``, ``leader`` (this process just won a Lease) or
    ``head`` (a pass only if the branch head moved since the last applied revision)."""
    revision: str | None = None
    received: float = 0.0
    """The clock's epoch seconds when the newest push of the burst arrived (for
    push-to-applied)."""
    merged: int = 1
    """How many triggers this one stands for."""
    delivery: str = ""
    """The webhook delivery id of the newest push (its history records it)."""


def merge(older: Trigger, newer: Trigger) -> Trigger:
    """One trigger for both: the newer revision, the stronger reason."""
    reason = max(older.reason, newer.reason, key=lambda r: PRIORITY.get(r, 0))
    revision = newer.revision or older.revision
    received = newer.received if newer.revision else older.received
    delivery = newer.delivery if newer.revision else older.delivery
    return replace(newer, reason=reason, revision=revision, received=received,
                   merged=older.merged + newer.merged, delivery=delivery)


class Coalescer:
    """A one-slot mailbox between the HTTP handlers and the reconcile worker."""

    def __init__(self, window: float = 1.0, max_delay: float | None = None,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.window = window
        self.clock = clock
        self.max_delay = max_delay if max_delay is not None else max(5 * window, window)
        self._cond = threading.Condition()
        self._pending: Trigger | None = None
        self._first = 0.0
        self._last = 0.0
        self._closed = False

    def offer(self, trigger: Trigger) -> None:
        """Queue ``trigger``, merging it into any trigger not yet taken."""
        now = self.clock.monotonic()
        with self._cond:
            if self._pending is None:
                self._pending, self._first = trigger, now
            else:
                self._pending = merge(self._pending, trigger)
            self._last = now
            self._cond.notify_all()

    def pending(self) -> Trigger | None:
        with self._cond:
            return self._pending

    def take(self, timeout: float | None = None) -> Trigger | None:
        """The merged trigger once its burst is over; ``None`` on timeout or close."""
        deadline = None if timeout is None else self.clock.monotonic() + timeout
        with self._cond:
            while not self._closed:
                now = self.clock.monotonic()
                if self._pending is not None:
                    due = min(self._last + self.window, self._first + self.max_delay)
                    if now >= due:
                        taken, self._pending = self._pending, None
                        return taken
                    wait = due - now
                else:
                    wait = None
                if deadline is not None:
                    if now >= deadline:
                        return None
                    wait = deadline - now if wait is None else min(wait, deadline - now)
                self.clock.wait(self._cond, wait)
            return None

    def close(self) -> None:
        """Wake the worker for good: every later :meth:`take` returns ``None``."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
