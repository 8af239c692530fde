"""The restart resumer's thread outlives a failed scan."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import pytest

from reconciler.api.resumer import RestartResumer
from reconciler.model import AppKey


class FailingOnce:
    """Annotations that cannot be read on the first scan, and none after it."""

    def __init__(self) -> None:
        self.calls = 0
        self.scanned_again = threading.Event()

    def annotated(self, key: str) -> Mapping[AppKey, Mapping[str, str]]:
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("a bug in a scan")
        self.scanned_again.set()
        return {}


def test_a_scan_that_fails_is_logged_and_the_next_one_still_runs(
        caplog: pytest.LogCaptureFixture) -> None:
    apps = FailingOnce()
    gateway: Any = SimpleNamespace(operations=SimpleNamespace(running=lambda app: False))
    resumer = RestartResumer(gateway, apps, every=0.01)
    with caplog.at_level(logging.ERROR, logger="pincompile.api"):
        resumer.start()
        try:
            assert apps.scanned_again.wait(5)
        finally:
            resumer.close()
    assert "looking for restarts to take over failed" in caplog.text
    assert "a bug in a scan" in caplog.text
