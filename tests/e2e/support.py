"""What the end-to-end tests share: polling until a condition holds on the fleet."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest


def wait_for(what: str, check: Callable[[], Any], timeout: float = 90.0,
             interval: float = 0.5, describe: Callable[[], str] | None = None) -> Any:
    """Poll ``check`` until it returns something truthy; fail with ``what`` (and what
    ``describe`` then says of the state) on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            state = f": {describe()}" if describe is not None else ""
            pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}{state}")
        time.sleep(interval)
