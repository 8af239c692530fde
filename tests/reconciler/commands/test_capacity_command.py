"""``pincompile capacity`` from the specs: the losses table, what would not fit, the
headroom, ``-o json``, and the exit code that says whether the required tiers survive."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from pincompile.cli import cli

FLEET = Path(__file__).parents[2] / "pincompile" / "capacity" / "fixtures" / "zones"


def capacity(*args: str) -> Result:
    return CliRunner().invoke(cli, ["capacity", *args], catch_exceptions=False,
                              env={"COLUMNS": "300"})


def test_the_table_names_each_loss_and_what_would_not_fit() -> None:
    result = capacity(str(FLEET), "--no-cache")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "Losing one zone at a time (* must survive: reserved)"
    assert lines[1].split() == ["LOST", "CLUSTERS", "MOVED", "RESERVED*", "ONDEMAND",
                                "TIGHTEST", "(reserved)"]
    assert lines[2].split() == ["zone", "za", "a-1", "2", "fits", "2", "pools", "over",
                                "b-1", "cpu", "1", "free", "of", "10", "(10%)"]
    assert ("  zone zb: c-1 capacity cpu over by 3 for ondemand (requested 13 of 10); moved "
            "there: PinApp/shop/batch +2, PinApp/shop/web +2, PinApp/shop/api +1") in lines
    assert "  zone za: PinPod/shop/scratch is lost with it (failover: false)" in lines
    headroom = lines.index("CLUSTER  ZONE  TIER         POOL            CPU FREE   MEMORY FREE")
    assert lines[headroom + 4].split() == ["b-1", "zb", "reserved", "capacity", "2", "of",
                                           "10", "32Gi", "of", "40Gi"]
    assert lines[-1] == "The fleet survives the loss of any one zone for reserved."


def test_a_required_tier_that_does_not_survive_exits_1_with_exit_code() -> None:
    args = (str(FLEET), "--no-cache", "--tier", "reserved", "--tier", "ondemand")
    assert capacity(*args).exit_code == 0  # a report
    result = capacity(*args, "--exit-code")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[-1] == (
        "The fleet does NOT survive the loss of any one zone for reserved, ondemand.")


def test_json_has_every_loss_its_findings_and_the_headroom() -> None:
    result = capacity(str(FLEET), "--no-cache", "--lose", "cluster", "-o", "json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert (data["lose"], data["requiredTiers"], data["survives"]) == (
        "cluster", ["reserved"], True)
    za = data["losses"][0]
    assert (za["lose"], za["name"], za["fits"]) == (
        "cluster", "a-1", {"reserved": True, "ondemand": False, "preemptible": True})
    assert za["over"][0] == {
        "cluster": "b-1", "pool": "capacity", "resource": "cpu", "tier": "ondemand",
        "tiersCounted": ["ondemand", "reserved"], "requested": "11", "capacity": "10",
        "over": "1", "movedHere": [{"workload": "PinApp/shop/web", "adds": "2"},
                                   {"workload": "PinApp/shop/api", "adds": "1"}]}
    assert {"cluster": "a-1", "zone": "za", "tier": "preemptible", "pool": "spare capacity",
            "resource": "cpu", "capacity": "10", "requested": "6500m",
            "free": "3500m"} in data["headroom"]


def test_invalid_specs_are_reported_and_exit_1(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(
        "apiVersion: pincompute.io/v1\nkind: Cluster\nmetadata: {name: x}\nspec: {}\n")
    result = capacity(str(tmp_path), "--no-cache")
    assert result.exit_code == 1
    assert "bad.yaml:4:7: error[" in result.stderr
