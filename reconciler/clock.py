"""Time as the reconciler writes and reads it: RFC 3339 UTC stamps, to the second, as
Kubernetes writes them; and the :class:`Clock` a process keeps time and waits with."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import Any


class Clock:
    """Real time. One clock goes to everything in a process that reads the time or waits
    for it to pass (serve's coalescer, resync timer, pass deadline and wait for health,
    Lease election, failover grace, restart claims, ``apply``'s wait for health), so that
    a test can hand over a fake one and advance it instead of sleeping
    (``tests/support/clock.py``)."""

    def __call__(self) -> float:
        """Epoch seconds: the instant stamps and reports name."""
        return time.time()

    def monotonic(self) -> float:
        """Seconds that never run backwards: what durations and deadlines are kept in."""
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def wait(self, cond: threading.Condition, seconds: float | None) -> None:
        """Wait (holding ``cond``) until ``cond`` is notified or ``seconds`` have passed
        (``None``: no limit); as any condition wait it may return early."""
        cond.wait(seconds)

    def wait_event(self, event: threading.Event, seconds: float) -> bool:
        """Wait until ``event`` is set or ``seconds`` have passed; whether it is set."""
        return event.wait(seconds)


#: the clock of a process that was not given another
SYSTEM_CLOCK = Clock()


def iso_time(epoch: float) -> str:
    """RFC 3339 UTC, to the second (``2026-11-28T10:19:26Z``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def parse_time(text: Any) -> float | None:
    """Epoch seconds of an RFC 3339 stamp (``Z`` or an offset, fractions allowed); None
    when ``text`` is empty or not such a stamp. A stamp without an offset is UTC."""
    if not text or not isinstance(text, str):
        return None
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        return None
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return at.timestamp()
