"""Each pass says where its time went: the wait from the trigger to the pass, the fetch and
the compile, before the reconciler's own steps, in ``/status`` (``lastPass.steps``) and in
one log line per pass (what ``bench/serve_latency.py`` reads)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from fake_runner import AtOnce

from reconciler.clock import Clock
from reconciler.engine import Flight, Reconciler
from reconciler.model import PassReport
from reconciler.serve.coalesce import Trigger
from reconciler.serve.metrics import Metrics
from reconciler.serve.mirror import Mirror
from reconciler.serve.runner import reconciler_factory
from reconciler.serve.service import Service
from tests.support.clock import FakeClock
from tests.support.serve import SpecRepo


class StepsRunner(AtOnce):
    """Reports a pass with the steps a reconciler times (nothing applied)."""

    def report(self, result: object) -> PassReport:
        report = PassReport(revision="r")
        report.steps = {"host sync": 0.25, "plan": 1.5}
        return report


def test_a_pass_reports_its_queue_fetch_and_compile_time_before_the_reconcilers_steps(
        spec_repo: SpecRepo, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    mirror = Mirror(str(spec_repo.bare), "main", tmp_path / "mirror")
    service = Service(mirror, lambda _scope, _clock: StepsRunner(), Metrics(),
                      clock=FakeClock(start=1000.0))
    with caplog.at_level(logging.INFO, logger="pincompile.serve"):
        report = service.pass_once(Trigger("push", "x", received=997.5))
    assert list(report.steps) == ["queued", "fetch", "compile", "host sync", "plan"]
    assert report.steps["queued"] == 2.5
    assert report.steps["fetch"] > 0 and report.steps["compile"] > 0
    assert service.state.last_pass is not None
    assert service.state.last_pass["steps"] == report.steps
    line = next(r.getMessage() for r in caplog.records if "steps (s)" in r.getMessage())
    assert line.startswith("pass r steps (s): queued 2.50, fetch ")
    assert line.endswith("host sync 0.25, plan 1.50")



class Settling(StepsRunner):
    """Records each health wait it is asked for."""

    def __init__(self) -> None:
        self.settled: list[tuple[float, Clock]] = []

    def settle(self, flight: Flight, timeout: float, clock: Clock) -> None:
        self.settled.append((timeout, clock))


def test_a_pass_waits_for_health_and_times_failover_on_the_services_clock(
        spec_repo: SpecRepo, tmp_path: Path) -> None:
    clock = FakeClock(start=1000.0)
    runner = Settling()
    built: list[Clock] = []

    def runners(_scope: frozenset[str] | None, runner_clock: Clock) -> Settling:
        built.append(runner_clock)
        return runner

    mirror = Mirror(str(spec_repo.bare), "main", tmp_path / "mirror")
    service = Service(mirror, runners, Metrics(), health_timeout=42.0, clock=clock)
    service.pass_once(Trigger("push", "x", received=1000.0))
    assert built == [clock]
    assert runner.settled == [(42.0, clock)]
    real = reconciler_factory(None, "host")(None, clock)
    try:
        assert isinstance(real, Reconciler) and real.failover_clock is clock
    finally:
        real.close()
