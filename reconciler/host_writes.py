"""The host's writes of one pass that nothing in the pass waits for: the specs' custom
resources (written while the members are planned and written) and the Events of what the
members' writes did (while the pass waits for health, and its statuses are written), in a
thread of their own. The statuses wait for the resources they are written to only."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from reconciler.errors import CLUSTER_ERRORS, explain


class HostWrites:
    """Writes to the host in the background, one batch after the other."""

    def __init__(self) -> None:
        self._pool: ThreadPoolExecutor | None = None
        self._batches: list[Future[str | None]] = []

    def submit(self, batch: Callable[..., str | None], *args: Any) -> Future[str | None]:
        """Run ``batch(*args)`` after the batches before it; it returns the error that
        stopped it, if one did (a cluster error it raises counts the same)."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="host-writes")
        self._batches.append(self._pool.submit(_guarded, batch, *args))
        return self._batches[-1]

    def join(self) -> str | None:
        """Wait for every batch; the first error among them, if any."""
        errors = [error for batch in self._batches if (error := batch.result()) is not None]
        self._batches.clear()
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
        return errors[0] if errors else None


def _guarded(batch: Callable[..., str | None], *args: Any) -> str | None:
    try:
        return batch(*args)
    except CLUSTER_ERRORS as exc:
        return explain(exc)
