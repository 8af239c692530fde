"""The command lines of a cluster's components."""

from __future__ import annotations

from pathlib import Path

import pytest


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


def test_etcd_answers_only_clients_with_a_certificate_of_the_fleet(tmp_path: Path) -> None:
    from reconciler.fleet.certs import Pki
    from reconciler.fleet.components import apiserver_args, etcd_args
    from reconciler.fleet.fleet import ClusterRuntime, FleetState

    pki = Pki(tmp_path / "pki")
    runtime = ClusterRuntime(name="a", context="a", port=1, controller_manager_port=2,
                             scheduler_port=3, etcd_prefix="/a", kwok_port=4)
    state = FleetState(dir=tmp_path, bin_dir="/bin", clusters=[runtime], etcd_port=2379,
                       etcd_peer_port=2380)
    etcd = etcd_args(state, pki)
    assert "--client-cert-auth" in etcd and "--peer-client-cert-auth" in etcd
    assert f"--trusted-ca-file={pki.ca_cert}" in etcd
    urls = [a.split("=", 1)[1] for a in etcd if a.split("=")[0].endswith("-urls")]
    assert urls and all(u.startswith("https://127.0.0.1:") for u in urls)
    apiserver = apiserver_args(state, runtime, pki)
    assert "--etcd-servers=https://127.0.0.1:2379" in apiserver
    assert f"--etcd-certfile={pki.etcd_cert}" in apiserver


def test_kwok_runs_under_its_reaper_with_nothing_of_the_users_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from reconciler.fleet.components import kwok_environment
    from reconciler.fleet.fleet import ClusterRuntime, FleetState, kwok_args

    monkeypatch.setenv("GITHUB_TOKEN", "secret")
    assert set(kwok_environment()) == {"PATH", "NO_PROXY", "no_proxy"}
    runtime = ClusterRuntime(name="a", context="a", port=1, controller_manager_port=2,
                             scheduler_port=3, etcd_prefix="/a", kwok_port=4,
                             kubelet_port=5)
    state = FleetState(dir=tmp_path, bin_dir="/bin", clusters=[runtime])
    args = kwok_args(state, 0, tmp_path / "kc")
    assert args[:4] == [sys.executable, "-m", "reconciler.fleet.reaper", "/bin/kwok"]
    # the nodes report the front as their kubelet; kwok serves metrics on its own port
    assert "--node-port=5" in args and "--server-address=127.0.0.1:4" in args
    assert "--enable-crds=Logs" in args
