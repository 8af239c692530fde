"""`fleet status` prints its table through the reconciler's one printer: it fits
$COLUMNS (the NODES summary cut first), the CONTEXT column is never cut."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from reconciler.fleet import profiles
from reconciler.fleet.cli import _print_table

INFO = {"healthy": True, "kubeconfig": "/tmp/fleet/kubeconfig", "processes": [],
        "clusters": [{"context": "use1a-general-01", "server": "https://127.0.0.1:27011",
                      "ready": True, "summary": "nodes 3/3 Ready, oldest lease renewal 6s "
                                                "ago"}]}


def test_fleet_status_fits_columns_and_keeps_the_context_whole(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COLUMNS", "70")
    state = SimpleNamespace(dir=Path("/tmp/fleet"), phase="up", versions={"kubernetes": "1"},
                            timers=profiles.profile(profiles.TEST))
    _print_table(state, INFO)  # type: ignore[arg-type]
    lines = capsys.readouterr().out.splitlines()
    table = lines[lines.index(next(line for line in lines if "CONTEXT" in line)):][:2]
    assert table[0].split() == ["CONTEXT", "SERVER", "API", "NODES"]
    assert table[1].split()[0] == "use1a-general-01" and table[1].endswith("…")
    assert all(len(line) <= 70 for line in table)
