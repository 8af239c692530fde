"""serve's pass waits for what it wrote to turn healthy on the Service's clock: a pass whose
workloads never turn Ready waits ``health_timeout`` seconds of a fake clock, not of real
time, with the real reconciler over in-memory clusters."""

from __future__ import annotations

import time
from pathlib import Path

from pincompile.compiler import compile_path
from reconciler.clock import Clock
from reconciler.engine import Reconciler
from reconciler.serve.coalesce import Trigger
from reconciler.serve.metrics import Metrics
from reconciler.serve.mirror import Mirror
from reconciler.serve.service import Service
from tests.support.clock import FakeClock
from tests.support.fake_passes import SUNDAY, fake_fleet, spec_repo
from tests.support.kube_controllers import Controllers


def test_a_pass_whose_workloads_never_turn_ready_waits_out_the_services_clock(
        tmp_path: Path) -> None:
    repo = spec_repo(tmp_path / "repo")
    fleet = fake_fleet(compile_path(repo), Controllers(never_ready={""}))  # every image
    clock = FakeClock()

    def runners(scope: frozenset[str] | None, runner_clock: Clock) -> Reconciler:
        return Reconciler(None, clusters=scope, watch=True, clock=lambda: SUNDAY,
                          connect=fleet.connect, failover_clock=runner_clock)

    service = Service(Mirror(str(repo), "main", tmp_path / "mirror"), runners, Metrics(),
                      health_timeout=120.0, clock=clock)
    started = time.monotonic()
    try:
        report = service.pass_once(Trigger("start", received=clock()))
    finally:
        service.close()
    assert report.ok, report
    assert report.steps["wait"] == 120.0  # seconds of the fake clock ...
    assert time.monotonic() - started < 60  # ... not of real time
