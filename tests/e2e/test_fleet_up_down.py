"""``fleet up``, ``down`` and ``up`` again on a fleet of its own (one small cluster): the
second start finds nothing of the first, and ``down`` leaves no process, no state and no
pods' scratch directory. It starts and stops its own fleets, so it shares none (the
run's workers put it beside the exclusive fleet's modules, before that fleet starts)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from reconciler.fleet import fleet as fleet_mod
from reconciler.fleet.cli import fleet as fleet_cli
from reconciler.fleet.processes import is_alive

pytestmark = pytest.mark.e2e

SINGLE = Path(__file__).parent / "fixtures" / "single"


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().decode(errors="replace")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmdline and state not in "ZX":
            found.append(int(proc.name))
    return found


def test_up_down_up_leaves_nothing_behind(e2e_toolchain: Path) -> None:
    runner = CliRunner()
    directory = fleet_mod.default_dir().parent / f"fleet-e2e-updown-{os.getpid()}"
    args = ["--dir", str(directory)]
    try:
        for round_ in range(2):
            result = runner.invoke(fleet_cli, ["up", "--clusters", str(SINGLE), *args])
            assert result.exit_code == 0, result.output
            state = fleet_mod.read_state(directory)
            assert state is not None and fleet_mod.is_running(state), round_
            assert {c.context for c in state.clusters} == {"host", "solo"}
            procs = state.procs
            assert all(is_alive(p) for p in procs)

            result = runner.invoke(fleet_cli, ["down", *args])
            assert result.exit_code == 0, result.output
            assert not [p for p in procs if is_alive(p)]
            assert not [p.pid for p in procs if Path(f"/proc/{p.pid}").exists()
                        and is_alive(p)]
            assert not _processes_mentioning(str(directory))
            assert not Path(state.exec_dir).exists()  # the pods' scratch directories
            assert fleet_mod.read_state(directory) is None
            result = runner.invoke(fleet_cli, ["status", *args])
            assert result.exit_code == 3 and "down" in result.output
    finally:
        fleet_mod.down(directory, echo=lambda _m: None)
        shutil.rmtree(directory, ignore_errors=True)
