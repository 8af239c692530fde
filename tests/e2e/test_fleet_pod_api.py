"""What a member cluster of the fleet serves about a running pod, through its real API
server: resource metrics (metrics-server scraping kwok's emulated kubelet, as
``kubectl top`` reads them), the usage ``pincompile fleet load`` sets and the pod's log
(``kubectl logs -f``); exec: ``test_fleet_exec.py``."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from click.testing import CliRunner

from reconciler.fleet import debugging
from reconciler.fleet import fleet as fleet_mod
from reconciler.fleet.cli import fleet as fleet_cli
from reconciler.fleet.clusters import ClusterSpec
from tests.e2e.support import general_cluster
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e

NAMESPACE = "pod-api-e2e"
POD = "probe"
CPU_REQUEST_MILLI = 200
MEMORY_REQUEST_MI = 256
Kube = Callable[[str], Any]


@pytest.fixture(scope="module")
def running_pod(fleet: fleet_mod.FleetState, fleet_specs: dict[str, ClusterSpec],
                kube: Kube) -> Iterator[ClusterSpec]:
    """A Running pod (labelled as pincompile labels an app's pods) in a member cluster."""
    from kubernetes import client

    cluster = general_cluster(fleet_specs)
    core: Any = client.CoreV1Api(kube(cluster.context))
    core.create_namespace({"metadata": {"name": NAMESPACE}})
    core.create_namespaced_pod(NAMESPACE, {
        "metadata": {"name": POD, "labels": {"pincompute.io/project": NAMESPACE,
                                             "pincompute.io/app": POD,
                                             "pincompute.io/kind": "PinPod"}},
        "spec": {"containers": [{
            "name": "main", "image": "registry.internal/e2e/probe:1.0",
            "resources": {"requests": {"cpu": f"{CPU_REQUEST_MILLI}m",
                                       "memory": f"{MEMORY_REQUEST_MI}Mi"}}}]},
    })
    wait_for(lambda: core.read_namespaced_pod(
        POD, NAMESPACE).status.phase == "Running", 60, "the pod to run")
    try:
        yield cluster
    finally:
        core.delete_namespace(NAMESPACE)


def pod_usage(kube: Kube, context: str) -> tuple[float, float] | None:
    """(CPU in millicores, memory in MiB) of the probe pod as metrics.k8s.io serves it."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException
    from kubernetes.utils import parse_quantity as kube_quantity

    custom: Any = client.CustomObjectsApi(kube(context))
    try:
        metrics = custom.get_namespaced_custom_object(
            "metrics.k8s.io", "v1beta1", NAMESPACE, "pods", POD)
    except ApiException as exc:
        if exc.status == 404:  # not scraped yet
            return None
        raise
    usage = metrics["containers"][0]["usage"]  # e.g. cpu 59926866n, memory 104857600
    return (float(kube_quantity(usage["cpu"]) * 1000),
            float(kube_quantity(usage["memory"]) / 2**20))


def test_metrics_api_serves_nodes_and_pods_at_a_steady_share_of_requests(
        running_pod: ClusterSpec, kube: Kube) -> None:
    from kubernetes import client

    context = running_pod.context
    custom: Any = client.CustomObjectsApi(kube(context))
    # as `kubectl top nodes`: every node, once metrics-server has scraped it
    nodes = wait_for(lambda: (items := custom.list_cluster_custom_object(
        "metrics.k8s.io", "v1beta1", "nodes")["items"]) and items, 90, "metrics of every node")
    assert all("cpu" in n["usage"] and "memory" in n["usage"] for n in nodes)
    usage = wait_for(lambda: pod_usage(kube, context), 90, "metrics of the pod")
    # the default emulated usage: 30% of the CPU request, 40% of the memory request
    assert usage[0] == pytest.approx(0.3 * CPU_REQUEST_MILLI, rel=0.1), usage
    assert usage[1] == pytest.approx(0.4 * MEMORY_REQUEST_MI, rel=0.1), usage


def test_fleet_load_sets_the_usage_the_metrics_api_serves(
        fleet: fleet_mod.FleetState, running_pod: ClusterSpec, kube: Kube) -> None:
    context = running_pod.context
    app = f"PinPod/{NAMESPACE}/{POD}"
    result = CliRunner().invoke(fleet_cli, ["load", app, "--cpu", "90%", "--dir",
                                            str(fleet.dir)])
    assert result.exit_code == 0, result.output
    assert f"{running_pod.name}: {app} (1 pods now) uses cpu 90%" in result.output
    wait_for(lambda: (u := pod_usage(kube, context)) and abs(
        u[0] - 0.9 * CPU_REQUEST_MILLI) < 0.1 * CPU_REQUEST_MILLI, 90, "90% of the CPU request")
    # a load for a while only: back to the default when it has passed
    result = CliRunner().invoke(fleet_cli, ["load", app, "--cpu", "150%", "--for", "20s",
                                            "--dir", str(fleet.dir)])
    assert result.exit_code == 0, result.output
    wait_for(lambda: (u := pod_usage(kube, context)) and abs(
        u[0] - 1.5 * CPU_REQUEST_MILLI) < 0.1 * CPU_REQUEST_MILLI, 60, "150% of the CPU request")
    wait_for(lambda: (u := pod_usage(kube, context)) and abs(
        u[0] - 0.3 * CPU_REQUEST_MILLI) < 0.1 * CPU_REQUEST_MILLI, 90,
             "the default usage after --for")
    missing = CliRunner().invoke(fleet_cli, ["load", f"PinPod/{NAMESPACE}/nope", "--cpu",
                                             "50%", "--dir", str(fleet.dir)])
    assert missing.exit_code == 1 and "no pods of" in missing.output
    bad = CliRunner().invoke(fleet_cli, ["load", app, "--cpu", "lots", "--dir",
                                         str(fleet.dir)])
    assert bad.exit_code == 2 and "percentage" in bad.output


def test_pod_log_follows_lines_appended_after_it_started(
        fleet: fleet_mod.FleetState, running_pod: ClusterSpec, kube: Kube) -> None:
    from kubernetes import client

    core: Any = client.CoreV1Api(kube(running_pod.context))
    started = time.time()
    stream = core.read_namespaced_pod_log(POD, NAMESPACE, follow=True, tail_lines=1,
                                          _preload_content=False, _request_timeout=30)
    lines: list[str] = []

    def read() -> None:
        for chunk in stream.stream(amt=256):
            lines.extend(chunk.decode().splitlines())
            if len(lines) >= 3:
                break

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=6 * debugging.LOG_INTERVAL + 10)
    stream.release_conn()
    assert len(lines) >= 3, lines
    numbers = [int(line.rsplit(" ", 1)[1]) for line in lines[:3]]
    assert numbers == sorted(numbers) and len(set(numbers)) == 3, lines
    # lines 2 and 3 were written after the request: the log streams, it is not a snapshot
    assert time.time() - started >= debugging.LOG_INTERVAL

