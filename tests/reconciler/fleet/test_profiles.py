"""Timer profiles: Kubernetes' defaults unless a test asks for short timers, and the short
ones still leave a node several Lease renewals within its grace period."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from reconciler.fleet import profiles
from reconciler.fleet.certs import Pki
from reconciler.fleet.cli import fleet as fleet_cli
from reconciler.fleet.components import apiserver_args, controller_manager_args, kwok_args
from reconciler.fleet.state import ClusterRuntime, FleetState

REPO = Path(__file__).parents[3]
TIMERS = ("--node-monitor-grace-period", "--node-monitor-period",
          "--horizontal-pod-autoscaler-sync-period",
          "--horizontal-pod-autoscaler-downscale-stabilization",
          "--default-not-ready-toleration-seconds", "--default-unreachable-toleration-seconds")


def command_lines(tmp_path: Path, profile: str) -> list[str]:
    runtime = ClusterRuntime(name="a", context="a", port=1, controller_manager_port=2,
                             scheduler_port=3, etcd_prefix="/a", kwok_port=4)
    state = FleetState(dir=tmp_path, bin_dir="/bin", clusters=[runtime], profile=profile)
    pki = Pki(tmp_path / "pki")
    return [*apiserver_args(state, runtime, pki),
            *controller_manager_args(state, runtime, pki, tmp_path / "kc"),
            *kwok_args(state, 0, tmp_path / "kc")]


def test_the_default_profile_sets_no_timer_and_the_test_profile_sets_them_all(
        tmp_path: Path) -> None:
    default = command_lines(tmp_path, profiles.DEFAULT)
    assert not [a for a in default if a.split("=")[0] in TIMERS]
    assert "--node-lease-duration-seconds=40" in default
    short = command_lines(tmp_path, profiles.TEST)
    assert {a.split("=")[0] for a in short} >= set(TIMERS)
    assert "--node-monitor-grace-period=20s" in short
    assert "--horizontal-pod-autoscaler-sync-period=5s" in short
    assert "--node-lease-duration-seconds=12" in short


@pytest.mark.parametrize("name", profiles.NAMES)
def test_nodes_renew_their_lease_at_least_five_times_per_grace_period(name: str) -> None:
    """A node goes NotReady only when kwok misses every renewal of a whole grace period;
    the short profile keeps at least the default's margin (5 renewals, 4 of which may be
    late on a loaded machine)."""
    timers = profiles.PROFILES[name]
    grace = timers.node_grace_seconds or 50
    assert grace / (timers.node_lease_seconds / 4) >= 5


def test_the_profile_comes_from_the_argument_then_the_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(profiles.ENV, raising=False)
    assert profiles.profile().name == profiles.DEFAULT
    monkeypatch.setenv(profiles.ENV, "test")
    assert profiles.profile().name == profiles.TEST
    assert profiles.profile("default").name == profiles.DEFAULT
    monkeypatch.setenv(profiles.ENV, "fast")
    with pytest.raises(ValueError, match=r"unknown fleet profile 'fast' \(from "
                                         r"\$PINCOMPILE_FLEET_PROFILE\); one of: default, test"):
        profiles.profile()


def test_the_state_records_the_profile_and_older_states_read_as_default(
        tmp_path: Path) -> None:
    state = FleetState(dir=tmp_path, profile=profiles.TEST)
    assert FleetState.from_json(state.to_json()).timers.name == profiles.TEST
    data = state.to_json()
    del data["profile"]
    assert FleetState.from_json(data).timers.name == profiles.DEFAULT


def test_an_unknown_profile_is_a_usage_error(tmp_path: Path) -> None:
    runner = CliRunner()
    flag = runner.invoke(fleet_cli, ["up", "--profile", "fast", "--dir", str(tmp_path)])
    assert flag.exit_code == 2 and "'fast' is not one of 'default', 'test'" in flag.output
    env = runner.invoke(fleet_cli, ["up", "--dir", str(tmp_path)],
                        env={profiles.ENV: "fast"})
    assert env.exit_code == 2
    assert "(env var: 'PINCOMPILE_FLEET_PROFILE'): 'fast' is not one of" in env.output


def test_make_demo_runs_the_default_profile_whatever_the_environment_says() -> None:
    demo = (REPO / "Makefile").read_text().split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    assert "pincompile fleet up --profile default" in demo
