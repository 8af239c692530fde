"""The command lines of a cluster's components."""

from __future__ import annotations

from pathlib import Path


def test_kwok_runs_with_node_leases_and_a_health_port(tmp_path: Path) -> None:
    from reconciler.fleet.fleet import ClusterRuntime, FleetState, kwok_args

    runtime = ClusterRuntime(name="a", context="a", port=1, controller_manager_port=2,
                             scheduler_port=3, etcd_prefix="/a", kwok_port=4321)
    state = FleetState(dir=tmp_path, bin_dir="/bin", clusters=[runtime])
    args = kwok_args(state, 0, tmp_path / "kwok.kubeconfig")
    assert f"--node-lease-duration-seconds={state.timers.node_lease_seconds}" in args
    assert "--server-address=127.0.0.1:4321" in args
    # state files written before kwok had a port still load
    data = state.to_json()
    del data["clusters"][0]["kwok_port"]
    assert FleetState.from_json(data).clusters[0].kwok_port == 0
