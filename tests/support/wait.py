"""Waiting for something to happen in a test: one helper for every folder."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(condition: Callable[[], T], timeout: float, what: str, *,
             interval: float = 0.1, describe: Callable[[], object] | None = None) -> T:
    """Call ``condition`` every ``interval`` seconds until it returns something true, and
    return that. After ``timeout`` seconds the test fails (AssertionError) naming ``what``
    it waited for and, when given, what ``describe()`` says of the state then."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            state = f": {describe()}" if describe is not None else ""
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}{state}")
        time.sleep(interval)
