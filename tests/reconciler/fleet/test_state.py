"""What a fleet's recorded state says each cluster runs."""

from __future__ import annotations


def test_a_cluster_runs_the_components_it_has_ports_for() -> None:
    from reconciler.fleet.fleet import ClusterRuntime

    host = ClusterRuntime("host", "host", 1, 2, 3, "/h", kwok_port=4)
    member = ClusterRuntime("m", "m", 1, 2, 3, "/m", kwok_port=4, metrics_server_port=5)
    trains = ClusterRuntime("t", "t", 1, 2, 3, "/t", kwok_port=4, metrics_server_port=5,
                            training_operator_port=6, training_webhook_port=7)
    control = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
    assert host.components == control
    assert member.components == (*control, "metrics-server")
    assert trains.components == (*control, "metrics-server", "training-operator")
