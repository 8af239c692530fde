"""A PinScaler on CPU, end to end on the local fleet: the compiled Deployment and HPA, the
member cluster's real HPA controller reading ``metrics.k8s.io`` from the cluster's
metrics-server, and the CPU usage set with ``pincompile fleet load``.

The test applies what ``pincompile compile`` produces for one member cluster itself
(server-side apply), as test_hpa_external_metric does: it exercises the HPA on CPU, not
the reconciler.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from ruamel.yaml import YAML

from pincompile.compiler import compile_path
from pincompile.manifest import Manifest
from reconciler.fleet import fleet as fleet_mod
from reconciler.fleet.cli import fleet as fleet_cli
from reconciler.fleet.clusters import ClusterSpec
from reconciler.fleet.nodes import GPU, parse_quantity
from tests.e2e.support import wait_for

pytestmark = pytest.mark.e2e

PROJECT = "cpu-e2e"
APP = "api"
TARGET = 50  # targetUtilization (% of the CPU request)
MAX = 4
SCALE_DOWN_WINDOW = 30  # cooldown.scaleDown, seconds
APPLY_ORDER = ("Namespace", "PriorityClass", "ResourceQuota", "Deployment",
               "PodDisruptionBudget", "HorizontalPodAutoscaler")
Kube = Callable[[str], Any]

APP_SPEC = f"""\
apiVersion: pincompute.io/v1
kind: Project
metadata: {{name: {PROJECT}}}
spec:
  owners: [e2e]
  quota:
    reserved: {{cpu: "8", memory: 16Gi}}
---
apiVersion: pincompute.io/v1
kind: PinApp
metadata: {{name: {APP}, project: {PROJECT}}}
spec:
  replicas: 1
  tier: reserved
  placement: {{clusters: [CLUSTER]}}
  template:
    containers:
      - name: main
        image: registry.internal/e2e/api:1.0
        resources: {{cpu: 100m, memory: 64Mi}}
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


def general_cluster(specs: dict[str, ClusterSpec]) -> ClusterSpec:
    for spec in specs.values():
        if spec.schedulable and parse_quantity(spec.capacity.get(GPU, "0")) == 0:
            return spec
    pytest.skip("the fleet has no schedulable general cluster")


def compiled_for(fleet: fleet_mod.FleetState, cluster: ClusterSpec, root: Path
                 ) -> list[Manifest]:
    """The objects ``pincompile compile`` makes of APP_SPEC for ``cluster``, in apply order."""
    (root / "platform").mkdir()
    files = sorted(Path(fleet.clusters_path).rglob("*.yaml")) if Path(
        fleet.clusters_path).is_dir() else [Path(fleet.clusters_path)]
    yaml = YAML(typ="safe")
    clusters = [d for f in files for d in yaml.load_all(f.read_text())
                if isinstance(d, dict) and d.get("kind") == "Cluster"]
    with open(root / "platform" / "clusters.yaml", "w") as out:
        YAML().dump_all(clusters, out)
    # the Project and its app in one file: the platform folder may hold both
    (root / "platform" / "api.yaml").write_text(APP_SPEC.replace("CLUSTER", cluster.name))
    result = compile_path(root, revision="e2e")
    assert result.ok, [str(d) for d in result.diagnostics]
    mine = [m for m in result.manifests if m.cluster == cluster.name and m.kind in APPLY_ORDER]
    return sorted(mine, key=lambda m: APPLY_ORDER.index(m.kind))


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
    from kubernetes import client, dynamic, watch
    from kubernetes.client.rest import ApiException

    cluster = general_cluster(fleet_specs)
    context = cluster.context
    scheduling: Any = client.SchedulingV1Api(kube(context))
    created_classes = []
    for manifest in compiled_for(fleet, cluster, tmp_path_factory.mktemp("cpu-specs")):
        if manifest.kind == "PriorityClass":  # shared by the cluster's apps: only if absent
            try:
                scheduling.create_priority_class(manifest.obj)
                created_classes.append(manifest.name)
            except ApiException as exc:
                if exc.status != 409:
                    raise
            continue
        resource = dynamic.DynamicClient(kube(context)).resources.get(
            api_version=manifest.api_version, kind=manifest.kind)
        resource.server_side_apply(body=manifest.obj, namespace=manifest.namespace,
                                   field_manager="pincompile-e2e", force_conflicts=True)
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
            scheduling.delete_priority_class(name)


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


def test_hpa_scales_up_on_cpu_load_and_back_down_after_its_window(
        fleet: fleet_mod.FleetState, deployment: tuple[ClusterSpec, ReplicaWatch],
        kube: Kube) -> None:
    cluster, seen = deployment
    context = cluster.context
    # the default emulated usage (30% of the request) is below the target: 1 replica, and
    # the HPA computes a utilization (no "failed to get cpu utilization")
    utilization, conditions = wait_for(
        "the HPA to read CPU utilization",
        lambda: (r := cpu_reading(kube, context))[0] is not None and r, timeout=120)
    assert utilization == pytest.approx(30, abs=3)
    assert conditions["ScalingActive"].status == "True"
    wait_for("1 replica", lambda: seen.latest() == 1, timeout=60)

    # 90% of the request on every pod, new ones included: ceil(n * 90 / 50) until the max
    load(fleet, cluster, 90)
    wait_for(f"{MAX} replicas", lambda: seen.latest() == MAX, timeout=150)
    # once every pod has metrics the HPA wants ceil(4 * 90 / 50) = 8: held at the max
    limited = wait_for("ScalingLimited", lambda: (c := cpu_reading(kube, context)[1].get(
        "ScalingLimited")) is not None and c.status == "True" and c, timeout=90)
    assert limited.reason == "TooManyReplicas"

    # 10%: the HPA reads it at once but keeps the replicas for the stabilization window
    load(fleet, cluster, 10)
    lowered = time.time()
    wait_for("the HPA to read 10%", lambda: (cpu_reading(kube, context)[0] or 100) <= 12,
             timeout=90)
    read_low = time.time()
    wait_for("the scale-down to 1 replica", lambda: seen.latest() == 1,
             timeout=SCALE_DOWN_WINDOW + 120)
    down_at = next(t for t, replicas in seen.events if t > lowered and replicas < MAX)
    assert down_at - lowered >= SCALE_DOWN_WINDOW - 1, (
        f"scaled down {down_at - lowered:.1f}s after the load dropped")
    assert max(r for _, r in seen.events) == MAX
    print(f"scale-down {down_at - lowered:.0f}s after the load dropped (read after "
          f"{read_low - lowered:.0f}s; window {SCALE_DOWN_WINDOW}s)")
