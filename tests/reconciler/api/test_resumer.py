"""The restart resumer, on a fake clock: its thread outlives a failed scan, and a claim is
taken over only once it has not been renewed for ``STALE_SECONDS`` of the gateway's clock."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import pytest

from reconciler.api import resumer as resumer_mod
from reconciler.api.actions import Operations
from reconciler.api.resumer import RestartResumer
from reconciler.clock import iso_time
from reconciler.model import AppKey
from reconciler.rollout.restart import (
    CLAIM_AT,
    CLAIM_BY,
    CLAIM_HOLDER,
    CLAIM_RENEWED,
    RENEW_SECONDS,
    STALE_SECONDS,
    Claim,
)
from tests.support.clock import FakeClock

APP: AppKey = ("PinApp", "shop", "web")


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
    apps, clock = FailingOnce(), FakeClock()
    gateway: Any = SimpleNamespace(operations=Operations(clock=clock))
    resumer = RestartResumer(gateway, apps, every=15.0)
    with caplog.at_level(logging.ERROR, logger="pincompile.api"):
        resumer.start()
        try:
            clock.settle()
            assert apps.calls == 0  # no scan before its interval has passed
            clock.advance(15.0)
            clock.settle()
            assert apps.calls == 1
            clock.advance(15.0)
            assert apps.scanned_again.wait(5)
        finally:
            resumer.close()
    assert "looking for restarts to take over failed" in caplog.text
    assert "a bug in a scan" in caplog.text


class Claimed:
    """One app with a restart claim (its annotations on the host)."""

    def __init__(self, claim: Claim) -> None:
        self.claim = claim

    def annotated(self, key: str) -> Mapping[AppKey, Mapping[str, str]]:
        assert key == CLAIM_AT
        c = self.claim
        return {APP: {CLAIM_AT: c.at, CLAIM_BY: c.by, CLAIM_HOLDER: c.holder,
                      CLAIM_RENEWED: c.renewed}}


def test_a_claim_is_taken_over_once_it_is_stale_on_the_gateways_clock(
        monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    at = iso_time(clock())
    taken: list[tuple[AppKey, Claim]] = []
    monkeypatch.setattr(resumer_mod, "resume_restart",
                        lambda _gateway, app, claim: taken.append((app, claim)))
    gateway: Any = SimpleNamespace(operations=Operations(clock=clock))
    claimed = Claimed(Claim(at, "dana", "gone-server/1", at))
    scans = RestartResumer(gateway, claimed)
    clock.advance(RENEW_SECONDS)
    assert scans.scan() == [] and not taken  # renewed 10 s ago: its server still runs
    clock.advance(STALE_SECONDS - RENEW_SECONDS)
    assert scans.scan() == [] and not taken  # not renewed for exactly STALE_SECONDS
    clock.advance(1.0)
    assert scans.scan() == [APP]
    assert taken == [(APP, claimed.claim)]
