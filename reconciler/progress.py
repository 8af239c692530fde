"""How far a pass is, per member cluster: objects planned, applied (and how many a second)
and healthy.

:class:`Progress` is what the reconciler reports to (from its worker threads; it ignores
everything); ``apply`` shows it with :class:`LiveProgress` (a table redrawn in place, with
``rich``) on a terminal and :class:`PlainProgress` (one line per step) otherwise.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class ClusterProgress:
    """One member cluster's counts in a pass."""

    objects: int = 0
    changes: int = 0
    applied: int = 0
    waiting: int = 0
    healthy: int = 0
    state: str = "reading"
    writing_since: float | None = None
    """When its writes began (the clock's seconds)."""
    last_write: float | None = None
    at_once: int | None = None
    """Writes its API server is sent at once now (its pace), when known."""

    @property
    def rate(self) -> float | None:
        """Objects written a second so far (None before the first)."""
        if self.writing_since is None or self.last_write is None or not self.applied:
            return None
        return self.applied / max(self.last_write - self.writing_since, 1e-3)

    def rate_text(self) -> str:
        rate = self.rate
        text = "-" if rate is None else f"{rate:.1f}/s" if rate < 10 else f"{rate:.0f}/s"
        return text if self.at_once is None else f"{text}, {self.at_once} at once"


class Progress:
    """Receives a pass's progress; the base class keeps the counts and shows nothing."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clusters: dict[str, ClusterProgress] = {}
        self.lock = threading.Lock()
        self.clock = clock

    def _at(self, cluster: str) -> ClusterProgress:
        return self.clusters.setdefault(cluster, ClusterProgress())

    def planned(self, cluster: str, objects: int, changes: int) -> None:
        """``objects`` desired in ``cluster``, ``changes`` of them to write."""
        with self.lock:
            at = self._at(cluster)
            at.objects, at.changes = objects, changes
            at.state = "applying" if changes else "in sync"
        self.shown(cluster, "planned")

    def writing(self, cluster: str) -> None:
        """``cluster``'s writes begin (its objects a second count from now)."""
        with self.lock:
            self._at(cluster).writing_since = self.clock()

    def applied(self, cluster: str, at_once: int | None = None) -> None:
        """One more object written (created, updated, replaced or pruned); ``at_once``:
        the writes the cluster is sent at once now."""
        with self.lock:
            at = self._at(cluster)
            at.applied += 1
            at.at_once = at_once if at_once is not None else at.at_once
            at.last_write = self.clock()
            if at.writing_since is None:
                at.writing_since = at.last_write
        self.shown(cluster, "applied")

    def health(self, cluster: str, healthy: int, of: int) -> None:
        """``healthy`` of the ``of`` objects this pass wrote are healthy (or not waited)."""
        with self.lock:
            at = self._at(cluster)
            at.healthy, at.waiting = healthy, of
            at.state = "healthy" if healthy >= of else "waiting for health"
        self.shown(cluster, "health")

    def failed(self, cluster: str, error: str) -> None:
        with self.lock:
            self._at(cluster).state = f"FAILED: {error[:120]}"
        self.shown(cluster, "failed")

    def shown(self, cluster: str, step: str) -> None:
        """Called after each change (``step``: planned, applied, health, failed)."""

    def line(self, text: str) -> None:
        """A log line of the pass (the reconciler's ``echo``)."""

    def close(self) -> None:
        """The pass is over."""


class PlainProgress(Progress):
    """One line per cluster and step, for logs and pipes: planned, every tenth applied
    object and the last (with the objects written a second so far), each change of the
    healthy count."""

    def __init__(self, echo: Callable[[str], None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(clock)
        self.echo = echo

    def shown(self, cluster: str, step: str) -> None:
        with self.lock:
            at = self.clusters[cluster]
            text = {
                "planned": f"{at.changes} to write of {at.objects} objects",
                "applied": f"applied {at.applied}/{at.changes} ({at.rate_text()})"
                if at.applied == at.changes or at.applied % 10 == 0 else "",
                "health": f"healthy {at.healthy}/{at.waiting}",
                "failed": at.state,
            }[step]
        if text:
            self.echo(f"{cluster}: {text}")

    def line(self, text: str) -> None:
        self.echo(text)


class LiveProgress(Progress):
    """A table of every cluster's counts, redrawn in place on a terminal (``rich``); the
    pass's log lines scroll above it."""

    def __init__(self, console: Any, clock: Callable[[], float] = time.monotonic) -> None:
        from rich.live import Live

        super().__init__(clock)
        self.console = console
        self.live = Live(self._table(), console=console, refresh_per_second=4,
                         transient=False)
        self.live.start()

    def _table(self) -> Any:
        from rich.table import Table

        table = Table(box=None, pad_edge=False, header_style="bold")
        for column in ("CLUSTER", "OBJECTS", "TO WRITE", "APPLIED", "WRITES/S", "HEALTHY",
                       "STATE"):
            table.add_column(column, justify="left" if column in ("CLUSTER", "STATE")
                             else "right")
        with self.lock:
            for name, at in sorted(self.clusters.items()):
                table.add_row(name, str(at.objects), str(at.changes),
                              f"{at.applied}/{at.changes}", at.rate_text(),
                              f"{at.healthy}/{at.waiting}" if at.waiting else "-", at.state)
        return table

    def shown(self, cluster: str, step: str) -> None:
        self.live.update(self._table())

    def line(self, text: str) -> None:
        self.live.console.print(text, markup=False, highlight=False, soft_wrap=True)

    def close(self) -> None:
        self.live.update(self._table(), refresh=True)
        self.live.stop()


def for_output(echo: Callable[[str], None], terminal: bool) -> Progress:
    """:class:`LiveProgress` on stderr when ``terminal``, else :class:`PlainProgress`."""
    if not terminal:
        return PlainProgress(echo)
    from rich.console import Console

    return LiveProgress(Console(stderr=True))
