"""Repeated Events counted, as Kubernetes counts them: the event correlator of client-go
writes an Event again with ``count`` one higher and a new ``lastTimestamp`` when it would
record the same one again (same object, reason, type and message), instead of adding
another. :class:`EventLog` remembers the Events this process recorded for that; a
long-running ``serve`` repairing the same drift pass after pass keeps one Event of it."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from reconciler.model import AppKey

Same = tuple[AppKey, str, str, str]
"""What makes two Events the same: (app, reason, type, message)."""


@dataclass(frozen=True)
class Recorded:
    """An Event written: its name, how many times it happened, when it first did."""

    name: str
    count: int
    first: str


@dataclass
class EventLog:
    """The Events recorded lately (the last :attr:`limit`), thread-safe."""

    limit: int = 4096
    _seen: OrderedDict[Same, Recorded] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def last(self, same: Same) -> Recorded | None:
        """The Event this one repeats, if one was recorded lately."""
        with self._lock:
            return self._seen.get(same)

    def remember(self, same: Same, recorded: Recorded) -> None:
        with self._lock:
            self._seen[same] = recorded
            self._seen.move_to_end(same)
            while len(self._seen) > self.limit:
                self._seen.popitem(last=False)

    def forget(self, same: Same) -> None:
        with self._lock:
            self._seen.pop(same, None)
