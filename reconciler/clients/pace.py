"""How many writes one cluster is sent at once: as many as its API server takes without
queueing them, found while writing, the way TCP finds a link's rate.

A :class:`Pacer` holds each write (a server-side apply, its dry-run, a create, a delete)
until fewer than its limit are in flight. The limit moves with the answers, a window of
them at a time, each answer measured against the usual answer time of its resource (a
Deployment costs the server more than a ConfigMap: the median of its fastest eight
answers so far): it grows while they come about that fast, shrinks (to :data:`FLOOR` at
least) when they come more than twice as slowly (the server queues them: its priority
level's seats are taken), and halves on a 429, after which nothing more is sent until
the ``Retry-After`` the server asked for is over. Its ceiling is the seats of the
server's priority level for our requests when the server says them
(``X-Kubernetes-PF-*`` response headers, the priority level's configuration and the
``current_limit_seats`` it exposes: :func:`seats_of`), else :data:`CEILING`.

Reads are not paced: a LIST or a GET is not what a first apply sends thousands of, and a
watch is held for minutes.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from reconciler.model import Obj

PRIORITY_LEVEL_HEADER = "X-Kubernetes-PF-PriorityLevel-UID"
"""The priority level an API server's flow control put a request in (a uid)."""
INITIAL = 8
"""Writes in flight at first (what every pass sent each cluster before it was paced)."""
CEILING = 64
"""The most writes in flight to one cluster (threads a pass keeps for it)."""
SLOWER = 2.0
"""A window of answers this many times slower than usual: the server queues them."""
FASTER = 1.25
"""A window within this factor of usual: the server takes more."""
FLOOR = 4.0
"""Slow answers bring the limit down to this, no lower (only 429s do): a machine busy with
other work answers everyone slowly, and a few writes at once cost its server nothing."""
USUAL = 8
"""Answers of one resource whose median makes a candidate for its usual answer time."""


@dataclass
class Pacer:
    """The writes in flight to one cluster (thread-safe); ``clock`` in seconds."""

    limit: float = INITIAL
    ceiling: int = CEILING
    clock: Callable[[], float] = time.monotonic
    in_flight: int = 0
    usual: dict[str, float] = field(default_factory=dict)
    """Per resource: its usual answer time (the lowest median of :data:`USUAL` answers)."""
    paused_until: float = 0.0
    """Nothing is sent before this instant (a 429's ``Retry-After``)."""
    throttled: int = 0
    """429s answered so far."""
    window: list[float] = field(default_factory=list)
    """This window's answers, each over its resource's usual time."""
    recent: dict[str, list[float]] = field(default_factory=dict)
    _lock: threading.Condition = field(default_factory=threading.Condition, repr=False)

    @property
    def allowed(self) -> int:
        """Writes that may be in flight now."""
        return max(1, min(self.ceiling, math.floor(self.limit)))

    def acquire(self) -> None:
        """Wait until one more write may be sent; it counts as in flight from then on."""
        with self._lock:
            while (wait := self._take()) is not None:
                self._lock.wait(wait or None)

    def try_acquire(self) -> float | None:
        """:meth:`acquire` without waiting: None when the write counts as in flight now,
        else the seconds until one may be sent (0.0: once a write in flight answers)."""
        with self._lock:
            return self._take()

    def _take(self) -> float | None:
        pause = self.paused_until - self.clock()
        if pause > 0:
            return pause
        if self.in_flight >= self.allowed:
            return 0.0
        self.in_flight += 1
        return None

    def release(self, seconds: float, resource: str = "", *, throttled: bool = False,
                retry_after: float | None = None) -> None:
        """A write of ``resource`` answered after ``seconds``; ``throttled``: with a 429,
        which asked to come back after ``retry_after`` seconds."""
        with self._lock:
            self.in_flight -= 1
            if throttled:
                self.throttled += 1
                self.limit = max(1.0, self.limit / 2)
                self.window.clear()
                if retry_after:
                    self.paused_until = max(self.paused_until, self.clock() + retry_after)
            else:
                self._heard(seconds, resource)
            self._lock.notify_all()

    def _heard(self, seconds: float, resource: str) -> None:
        recent = self.recent.setdefault(resource, [])
        recent.append(seconds)
        if len(recent) >= USUAL:
            median = sorted(recent)[len(recent) // 2]
            self.usual[resource] = min(median, self.usual.get(resource, median))
            recent.clear()
        usual = self.usual.get(resource)
        if usual is None:
            return
        self.window.append(seconds / max(usual, 1e-6))
        if len(self.window) >= max(USUAL, self.allowed):
            self._judge(sum(self.window) / len(self.window))
            self.window.clear()

    def _judge(self, slower: float) -> None:
        """Move the limit by how many times slower than usual a window's answers came."""
        if slower > SLOWER:
            if self.limit <= FLOOR:  # as few as it takes and still slow: slow for everyone
                self.usual = {r: t * slower / FASTER for r, t in self.usual.items()}
            self.limit = max(min(FLOOR, self.limit), self.limit * 0.75)
        elif slower <= FASTER:
            self.limit = min(float(self.ceiling), self.limit + max(1.0, self.limit / 2))

    def cap(self, seats: int) -> None:
        """At most ``seats`` in flight (the server's priority level for our requests)."""
        with self._lock:
            self.ceiling = max(1, min(CEILING, seats))
            self.limit = min(self.limit, float(self.ceiling))
            self._lock.notify_all()


def seats_of(levels: list[Obj], uid: str, metrics: str | None) -> int | None:
    """The seats an API server gives the priority level ``uid`` (from its configurations,
    ``levels``), or None when it does not limit it: an ``Exempt`` level, or a limited one
    whose ``apiserver_flowcontrol_current_limit_seats`` the server's ``metrics`` text
    does not show (None when they could not be read)."""
    level = next((lv for lv in levels if (lv.get("metadata") or {}).get("uid") == uid), None)
    if level is None or (level.get("spec") or {}).get("type") != "Limited" or not metrics:
        return None
    name = (level.get("metadata") or {}).get("name")
    wanted = f'apiserver_flowcontrol_current_limit_seats{{priority_level="{name}"}}'
    for line in metrics.splitlines():
        if line.startswith(wanted):
            try:
                return max(1, int(float(line.rsplit(" ", 1)[1])))
            except (IndexError, ValueError):
                return None
    return None


def threads(access: object, writes: int, fixed: int | None = None) -> int:
    """Threads to give ``writes`` writes to one cluster: ``fixed`` when set, else as many as
    its pacer may let write at once (``Connection.pace_for``); 8 for a cluster reached
    without one (the tests' in-memory clusters)."""
    if fixed:
        return fixed
    pace_for = getattr(access, "pace_for", None)
    return int(pace_for(writes)) if pace_for is not None else max(1, min(writes, 8))


def at_once(access: object) -> int | None:
    """The writes a cluster is sent at once now (None: reached without a pacer)."""
    pacer = getattr(access, "pacer", None)
    return pacer.allowed if isinstance(pacer, Pacer) else None
