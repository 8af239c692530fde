"""The local fleet behaves like real clusters: scheduling, zones, GPUs, Jobs, up/down."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from click.testing import CliRunner
from ruamel.yaml import YAML

from reconciler.fleet import fleet as fleet_mod
from reconciler.fleet.cli import fleet as fleet_cli
from reconciler.fleet.clusters import ClusterSpec
from reconciler.fleet.nodes import GPU, GPU_TYPE_LABEL, POOL_LABEL, parse_quantity
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e

IMAGE = "registry.internal/e2e/app:1.0"
Kube = Callable[[str], Any]


def namespace(kube: Kube, context: str) -> str:
    from kubernetes import client

    name = f"e2e-{uuid.uuid4().hex[:8]}"
    core: Any = client.CoreV1Api(kube(context))
    core.create_namespace({"metadata": {"name": name}})
    return name


def gpu_cluster(specs: dict[str, ClusterSpec]) -> ClusterSpec:
    found = [s for s in specs.values() if parse_quantity(s.capacity.get(GPU, "0")) > 0]
    if not found:
        pytest.skip("the fleet has no GPU cluster")
    return found[0]


def general_cluster(specs: dict[str, ClusterSpec]) -> ClusterSpec:
    found = [s for s in specs.values()
             if parse_quantity(s.capacity.get(GPU, "0")) == 0 and s.schedulable]
    return found[0]


def container(name: str = "main", **resources: str) -> dict[str, Any]:
    res = {"requests": {"cpu": "100m", "memory": "64Mi", **resources}}
    if GPU in resources:
        res["limits"] = {GPU: resources[GPU]}
    return {"name": name, "image": IMAGE, "resources": res}


def test_kubeconfig_has_host_and_each_cluster_context(
    fleet: fleet_mod.FleetState, fleet_specs: dict[str, ClusterSpec], kube: Kube
) -> None:
    from kubernetes import client

    config = YAML(typ="safe").load(fleet.kubeconfig.read_text())
    contexts = {c["name"] for c in config["contexts"]}
    assert contexts == {s.context for s in fleet_specs.values()} | {"host"}
    for context in contexts:
        version: Any = client.VersionApi(kube(context)).get_code()
        assert version.git_version == fleet.versions["kubernetes"]
        server = next(c["cluster"]["server"] for c in config["clusters"] if c["name"] == context)
        assert server.startswith("https://127.0.0.1:")


def test_nodes_follow_cluster_specs(
    fleet: fleet_mod.FleetState, fleet_specs: dict[str, ClusterSpec], kube: Kube
) -> None:
    from kubernetes import client

    for spec in fleet_specs.values():
        nodes: Any = client.CoreV1Api(kube(spec.context)).list_node().items
        assert nodes, spec.name
        for resource, value in spec.capacity.items():
            total = sum((parse_quantity(n.status.allocatable.get(resource, "0")) for n in nodes),
                        Decimal(0))
            assert total == parse_quantity(value), (spec.name, resource)
        for node in nodes:
            labels = node.metadata.labels
            assert labels["topology.kubernetes.io/zone"] == spec.zone
            assert labels["topology.kubernetes.io/region"] == spec.region
            assert labels["kubernetes.io/arch"] in spec.arch
            assert all(labels.get(k) == v for k, v in spec.labels.items())
            ready = [c for c in node.status.conditions if c.type == "Ready"]
            assert ready and ready[0].status == "True", node.metadata.name
            is_gpu = GPU in node.status.allocatable
            assert (GPU_TYPE_LABEL in labels) == is_gpu
            if is_gpu:
                assert labels[GPU_TYPE_LABEL] in spec.gpu_types


def test_deployment_is_scheduled_in_its_zone_and_becomes_available(
    fleet: fleet_mod.FleetState, fleet_specs: dict[str, ClusterSpec], kube: Kube
) -> None:
    from kubernetes import client

    spec = general_cluster(fleet_specs)
    ns = namespace(kube, spec.context)
    apps: Any = client.AppsV1Api(kube(spec.context))
    core: Any = client.CoreV1Api(kube(spec.context))
    labels = {"app": "web"}
    apps.create_namespaced_deployment(ns, {
        "metadata": {"name": "web"},
        "spec": {"replicas": 3, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [container()],
                                       "nodeSelector": {
                                           "topology.kubernetes.io/zone": spec.zone}}}},
    })

    def available() -> bool:
        dep = apps.read_namespaced_deployment_status("web", ns)
        conds = {c.type: c.status for c in dep.status.conditions or []}
        return dep.status.available_replicas == 3 and conds.get("Available") == "True"

    wait_for(available, 90, "Deployment web to become Available")
    pods = core.list_namespaced_pod(ns, label_selector="app=web").items
    assert len(pods) == 3
    for pod in pods:
        assert pod.status.phase == "Running"
        node = core.read_node(pod.spec.node_name)
        assert node.metadata.labels["topology.kubernetes.io/zone"] == spec.zone
        assert node.metadata.labels["type"] == "kwok"


def test_job_completes(
    fleet: fleet_mod.FleetState, fleet_specs: dict[str, ClusterSpec], kube: Kube
) -> None:
    from kubernetes import client

    spec = general_cluster(fleet_specs)
    ns = namespace(kube, spec.context)
    batch: Any = client.BatchV1Api(kube(spec.context))
    batch.create_namespaced_job(ns, {
        "metadata": {"name": "shards"},
        "spec": {"completions": 4, "parallelism": 2, "completionMode": "Indexed",
                 "backoffLimit": 0,
                 "template": {"spec": {"restartPolicy": "Never",
                                       "containers": [container()]}}},
    })

    def complete() -> bool:
        job = batch.read_namespaced_job_status("shards", ns)
        conds = {c.type: c.status for c in job.status.conditions or []}
        assert conds.get("Failed") != "True", job.status
        return conds.get("Complete") == "True"

    wait_for(complete, 90, "Job shards to complete")
    assert batch.read_namespaced_job_status("shards", ns).status.succeeded == 4


def test_gpu_pods_land_only_on_gpu_nodes(
    fleet: fleet_mod.FleetState, fleet_specs: dict[str, ClusterSpec], kube: Kube
) -> None:
    from kubernetes import client

    spec = gpu_cluster(fleet_specs)
    gpu_type = spec.gpu_types[0] if spec.gpu_types else "generic"
    ns = namespace(kube, spec.context)
    apps: Any = client.AppsV1Api(kube(spec.context))
    core: Any = client.CoreV1Api(kube(spec.context))
    labels = {"app": "trainer"}
    apps.create_namespaced_deployment(ns, {
        "metadata": {"name": "trainer"},
        "spec": {"replicas": 3, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [container(**{GPU: "1"})],
                                       "nodeSelector": {GPU_TYPE_LABEL: gpu_type}}}},
    })
    # a plain pod in the same cluster stays off the (tainted) GPU nodes
    core.create_namespaced_pod(ns, {"metadata": {"name": "plain"},
                                    "spec": {"containers": [container()]}})

    def running() -> list[Any]:
        pods = core.list_namespaced_pod(ns).items
        ok = [p for p in pods if p.status.phase == "Running"]
        return ok if len(ok) == 4 else []

    pods = wait_for(running, 90, "GPU pods to run")
    for pod in pods:
        node = core.read_node(pod.spec.node_name)
        wants_gpu = pod.metadata.name != "plain"
        assert (GPU in node.status.allocatable) == wants_gpu, pod.metadata.name
        if wants_gpu:
            assert node.metadata.labels[GPU_TYPE_LABEL] == gpu_type
            assert node.metadata.labels[POOL_LABEL] == "gpu"
            assert any(t.key == GPU for t in pod.spec.tolerations or [])


def test_gpu_pod_stays_pending_without_gpus(
    fleet: fleet_mod.FleetState, fleet_specs: dict[str, ClusterSpec], kube: Kube
) -> None:
    from kubernetes import client

    spec = general_cluster(fleet_specs)
    ns = namespace(kube, spec.context)
    core: Any = client.CoreV1Api(kube(spec.context))
    core.create_namespaced_pod(ns, {"metadata": {"name": "wants-gpu"},
                                    "spec": {"containers": [container(**{GPU: "1"})]}})

    def unschedulable() -> bool:
        pod = core.read_namespaced_pod_status("wants-gpu", ns)
        return any(c.type == "PodScheduled" and c.status == "False"
                   and c.reason == "Unschedulable" for c in pod.status.conditions or [])

    wait_for(unschedulable, 60, "the scheduler to report the GPU pod Unschedulable")
    time.sleep(2)
    pod = core.read_namespaced_pod_status("wants-gpu", ns)
    assert pod.status.phase == "Pending" and not pod.spec.node_name


def test_volume_claims_are_provisioned_and_pods_using_them_run(
    fleet: fleet_mod.FleetState, fleet_specs: dict[str, ClusterSpec], kube: Kube
) -> None:
    from kubernetes import client

    spec = general_cluster(fleet_specs)
    ns = namespace(kube, spec.context)
    core: Any = client.CoreV1Api(kube(spec.context))
    core.create_namespaced_persistent_volume_claim(ns, {
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "pincompute-block",
                 "resources": {"requests": {"storage": "10Gi"}}},
    })
    pod = {"metadata": {"name": "uses-data"},
           "spec": {"containers": [{**container(), "volumeMounts": [
               {"name": "data", "mountPath": "/data"}]}],
               "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]}}
    core.create_namespaced_pod(ns, pod)
    wait_for(lambda: core.read_namespaced_persistent_volume_claim(
        "data", ns).status.phase == "Bound", 90, "the claim to bind")
    wait_for(lambda: core.read_namespaced_pod_status(
        "uses-data", ns).status.phase == "Running", 90, "the pod to run")


def test_failing_pods_via_annotation_fail_the_job(
    fleet: fleet_mod.FleetState, fleet_specs: dict[str, ClusterSpec], kube: Kube
) -> None:
    from kubernetes import client

    spec = general_cluster(fleet_specs)
    ns = namespace(kube, spec.context)
    batch: Any = client.BatchV1Api(kube(spec.context))
    batch.create_namespaced_job(ns, {
        "metadata": {"name": "broken"},
        "spec": {"backoffLimit": 1, "template": {
            "metadata": {"annotations": {"kwok.pincompute.io/exit-code": "2"}},
            "spec": {"restartPolicy": "Never", "containers": [container()]}}},
    })

    def failed() -> bool:
        job = batch.read_namespaced_job_status("broken", ns)
        return any(c.type == "Failed" and c.status == "True"
                   for c in job.status.conditions or [])

    wait_for(failed, 90, "Job broken to fail")


def test_second_up_is_a_noop_and_status_reports(fleet: fleet_mod.FleetState) -> None:
    runner = CliRunner()
    before = fleet_mod.read_state(fleet.dir)  # as recorded now: another process of the run
    assert before is not None                 # may have restarted a component since
    pids = [p.pid for p in before.procs]
    result = runner.invoke(fleet_cli, ["up", "--dir", str(fleet.dir),
                                       "--clusters", fleet.clusters_path])
    assert result.exit_code == 0, result.output
    assert "already up" in result.output
    again = fleet_mod.read_state(fleet.dir)
    assert again is not None and [p.pid for p in again.procs] == pids
    result = runner.invoke(fleet_cli, ["status", "--dir", str(fleet.dir), "--json"])
    assert result.exit_code == 0, result.output
    info = json.loads(result.output)
    assert info["healthy"] and {c["context"] for c in info["clusters"]} >= {"host"}
