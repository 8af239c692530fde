"""Requests made to one cluster, counted by verb and resource: how tests and ``apply`` know
that a pass made zero writes and at most one LIST per kind. The real connection's hook
(:mod:`reconciler.clients.connect`) and the in-memory cluster of the tests count alike."""

from __future__ import annotations

import threading
from collections import Counter, deque
from dataclasses import dataclass, field

WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})


LISTS_KEPT = 256
"""Timed LISTs a connection keeps (a long-running ``serve`` relists now and then)."""


@dataclass(frozen=True)
class ListTiming:
    """One LIST: the request (sent to the whole body read), its parse, and its size."""

    resource: str
    seconds: float
    parse_seconds: float
    size: int
    """Bytes of the response body."""
    objects: int


@dataclass
class RequestStats:
    """Requests made to one cluster, by verb and resource (thread-safe)."""

    by_verb: Counter[str] = field(default_factory=Counter)
    lists: Counter[str] = field(default_factory=Counter)
    """LIST requests per resource (``deployments``, ``pods``, ...)."""
    writes_by_resource: Counter[str] = field(default_factory=Counter)
    listed: deque[ListTiming] = field(default_factory=lambda: deque(maxlen=LISTS_KEPT))
    """The last LISTs, timed (:meth:`reconciler.clients.connect.Connection.list`)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, verb: str, resource: str) -> None:
        with self._lock:
            self.by_verb[verb] += 1
            if verb == "list":
                self.lists[resource] += 1
            if verb in WRITE_VERBS:
                self.writes_by_resource[resource] += 1

    @property
    def writes(self) -> int:
        return sum(self.by_verb[v] for v in WRITE_VERBS)

    def timed(self, timing: ListTiming) -> None:
        with self._lock:
            self.listed.append(timing)

    def reset(self) -> None:
        with self._lock:
            self.by_verb.clear()
            self.lists.clear()
            self.writes_by_resource.clear()
            self.listed.clear()


