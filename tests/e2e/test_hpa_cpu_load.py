"""A PinScaler on CPU, end to end on the local fleet: the compiled Deployment and HPA, the
member cluster's real HPA controller reading ``metrics.k8s.io`` from the cluster's
metrics-server, and the CPU usage set with ``pincompile fleet load``.

The test applies what ``pincompile compile`` produces for one member cluster itself
(server-side apply), as test_hpa_external_metric does: it exercises the HPA on CPU, not
the reconciler. Its waits are counted in the fleet's HPA cycles (a metrics scrape and an
HPA sync: 30 s with Kubernetes' timers, 15 s under the test profile).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from click.testing import CliRunner

from reconciler.fleet import fleet as fleet_mod
from reconciler.fleet.cli import fleet as fleet_cli
from reconciler.fleet.clusters import ClusterSpec
from tests.e2e.support import (
    apply_all,
    compile_for,
    general_cluster,
    project_and_app,
)
from tests.support.fleet import timer
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e

PROJECT = "cpu-e2e"
APP = "api"
TARGET = 35  # targetUtilization (% of the CPU request)
MAX = 3
SCALE_DOWN_WINDOW = 30  # cooldown.scaleDown, seconds
Kube = Callable[[str], Any]

SCALER_SPEC = f"""\
---
apiVersion: pincompute.io/v1
kind: PinScaler
metadata: {{name: {APP}, project: {PROJECT}}}
spec:
  target: {APP}
  minReplicas: 1
  maxReplicas: {MAX}
  metrics:
    - {{type: cpu, targetUtilization: {TARGET}}}
  cooldown: {{scaleUp: 0s, scaleDown: {SCALE_DOWN_WINDOW}s}}
"""


@dataclass
class ReplicaWatch:
    """Every (time.time(), spec.replicas) of the Deployment, from a watch."""

    events: list[tuple[float, int]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def latest(self) -> int:
        return self.events[-1][1] if self.events else 0


@pytest.fixture(scope="module")
def deployment(fleet: fleet_mod.FleetState, fleet_specs: dict[str, ClusterSpec], kube: Kube,
               tmp_path_factory: pytest.TempPathFactory
               ) -> Iterator[tuple[ClusterSpec, ReplicaWatch]]:
    from kubernetes import client, watch

    cluster = general_cluster(fleet_specs)
    context = cluster.context
    specs = project_and_app(PROJECT, APP, cluster.name, "registry.internal/e2e/api:1.0")
    manifests = compile_for(fleet.clusters_path, cluster.name, specs + SCALER_SPEC,
                            tmp_path_factory.mktemp("cpu-specs"))
    created_classes = apply_all(kube(context), manifests)
    apps: Any = client.AppsV1Api(kube(context))
    seen = ReplicaWatch()

    def follow() -> None:
        while not seen.stop.is_set():
            for event in watch.Watch().stream(apps.list_namespaced_deployment, PROJECT,
                                              field_selector=f"metadata.name={APP}",
                                              timeout_seconds=5):
                seen.events.append((time.time(), event["object"].spec.replicas or 0))
                if seen.stop.is_set():
                    break

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    try:
        yield cluster, seen
    finally:
        seen.stop.set()
        thread.join(timeout=15)
        client.CoreV1Api(kube(context)).delete_namespace(PROJECT)
        for name in created_classes:
            client.SchedulingV1Api(kube(context)).delete_priority_class(name)


def cpu_reading(kube: Kube, context: str) -> tuple[int | None, dict[str, Any]]:
    """(the HPA's current average CPU utilization, its conditions by type)."""
    from kubernetes import client

    status = client.AutoscalingV2Api(kube(context)).read_namespaced_horizontal_pod_autoscaler(
        APP, PROJECT).status
    utilization = next((m.resource.current.average_utilization
                        for m in status.current_metrics or []
                        if m.type == "Resource" and m.resource.name == "cpu"), None)
    return utilization, {c.type: c for c in status.conditions or []}


def load(fleet: fleet_mod.FleetState, cluster: ClusterSpec, percent: int) -> None:
    result = CliRunner().invoke(fleet_cli, ["load", f"PinApp/{PROJECT}/{APP}", "--cpu",
                                            f"{percent}%", "--cluster", cluster.name,
                                            "--dir", str(fleet.dir)])
    assert result.exit_code == 0, result.output


def hpa_cycle(fleet: fleet_mod.FleetState) -> float:
    """Seconds from a change of the pods' usage to an HPA sync that has seen it."""
    return timer(fleet, "metric_resolution_seconds") + timer(fleet, "hpa_sync_seconds")


def test_hpa_scales_up_on_cpu_load_and_back_down_after_its_window(
        fleet: fleet_mod.FleetState, deployment: tuple[ClusterSpec, ReplicaWatch],
        kube: Kube) -> None:
    cluster, seen = deployment
    context = cluster.context
    cycle = hpa_cycle(fleet)
    # the default emulated usage (30% of the request) is below the target: 1 replica, and
    # the HPA computes a utilization (no "failed to get cpu utilization")
    utilization, conditions = wait_for(
        lambda: (r := cpu_reading(kube, context))[0] is not None and r, 4 * cycle,
        "the HPA to read CPU utilization")
    assert utilization == pytest.approx(30, abs=3)
    assert conditions["ScalingActive"].status == "True"
    wait_for(lambda: seen.latest() == 1, 60, "1 replica")

    # 100% of the request on every pod, new ones included: ceil(1 * 100 / 35) = 3, the
    # max, in one step
    load(fleet, cluster, 100)
    wait_for(lambda: seen.latest() == MAX, 5 * cycle, f"{MAX} replicas")
    # once every pod has metrics the HPA wants ceil(3 * 100 / 35) = 9: held at the max
    limited = wait_for(lambda: (c := cpu_reading(kube, context)[1].get(
        "ScalingLimited")) is not None and c.status == "True" and c, 3 * cycle,
        "ScalingLimited")
    assert limited.reason == "TooManyReplicas"

    # 10%: the HPA reads it at once but keeps the replicas for the stabilization window
    load(fleet, cluster, 10)
    lowered = time.time()
    wait_for(lambda: (cpu_reading(kube, context)[0] or 100) <= 12, 3 * cycle,
             "the HPA to read 10%")
    read_low = time.time()
    wait_for(lambda: seen.latest() == 1, SCALE_DOWN_WINDOW + 4 * cycle,
             "the scale-down to 1 replica")
    down_at = next(t for t, replicas in seen.events if t > lowered and replicas < MAX)
    assert down_at - lowered >= SCALE_DOWN_WINDOW - 1, (
        f"scaled down {down_at - lowered:.1f}s after the load dropped")
    assert max(r for _, r in seen.events) == MAX
    print(f"scale-down {down_at - lowered:.0f}s after the load dropped (read after "
          f"{read_low - lowered:.0f}s; window {SCALE_DOWN_WINDOW}s)")
