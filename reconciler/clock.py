"""Time as the reconciler writes and reads it: RFC 3339 UTC stamps, to the second, as
Kubernetes writes them."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any


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
