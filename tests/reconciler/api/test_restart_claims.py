"""A restart's claim on the host, on a fake clock: renewed every ``RENEW_SECONDS`` of the
clock while the restart runs (stamped with the clock's time), released when it ends."""

from __future__ import annotations

import threading
from pathlib import Path

from pincompile.compiler import compile_path
from reconciler.api import restarts
from reconciler.clients import read
from reconciler.clock import iso_time
from reconciler.host import cr_ref
from reconciler.model import AppKey
from reconciler.rollout.restart import RENEW_SECONDS, Claim, claim_of
from tests.support.clock import FakeClock
from tests.support.fake_passes import FakePass, fake_fleet, spec_repo

APP: AppKey = ("PinApp", "shop", "web")


def test_a_running_restart_renews_its_claim_on_the_clock_and_releases_it_at_the_end(
        tmp_path: Path) -> None:
    repo = spec_repo(tmp_path / "repo")
    fleet = fake_fleet(compile_path(repo))
    assert FakePass(fleet, repo).report.ok
    host = fleet.connect("host", "host")
    clock = FakeClock()
    at = iso_time(clock())
    claim = Claim(at, "dana", "here/1", at)
    assert restarts.take(host, APP, claim, read.get(host, cr_ref(APP)))  # type: ignore[arg-type]

    def renewed() -> str | None:
        current = claim_of(read.get(host, cr_ref(APP)))
        return current.renewed if current else None

    done = threading.Event()
    worker = threading.Thread(target=restarts.run_claimed, args=(
        host, APP, claim, lambda _claimed: done.wait()), kwargs={"clock": clock})
    worker.start()
    try:
        clock.settle()
        clock.advance(RENEW_SECONDS - 1)
        clock.settle()
        assert renewed() == at
        clock.advance(1)
        clock.settle()
        assert renewed() == iso_time(clock()) != at
    finally:
        done.set()
        worker.join(5)
    assert renewed() is None
