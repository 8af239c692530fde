"""A real HPA loop on the local fleet: a compiled PinApp + PinScaler with a custom metric,
the member cluster's own HPA controller, and an External metric served by the test.

The Deployment and HPA are what ``pincompile compile`` produces for one member cluster
(from a small spec tree written here); the test applies them itself (server-side apply)
because this exercises the HPA and the scheduled floors, not the reconciler.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from metrics_server import ExternalMetricsServer, register, unregister
from ruamel.yaml import YAML

from pincompile.compiler import compile_path
from pincompile.manifest import LABEL_APP, LABEL_CLUSTER, LABEL_PROJECT, Manifest
from reconciler.fleet import fleet as fleet_mod
from reconciler.fleet.clusters import ClusterSpec
from reconciler.fleet.nodes import GPU, parse_quantity
from reconciler.scaling import hpa_floor, with_scheduled_floor
from tests.e2e.support import wait_for

pytestmark = pytest.mark.e2e

PROJECT = "hpa-e2e"
APP = "web"
METRIC = "queue-depth"
PER_REPLICA = 10  # the PinScaler's targetPerReplica
MAX = 5  # the PinScaler's maxReplicas (one cluster: all of it is this cluster's share)
SCHEDULED_FLOOR = 3
SCALE_DOWN_WINDOW = 30  # cooldown.scaleDown, seconds
LA = ZoneInfo("America/Los_Angeles")
WINDOW_OPEN = datetime(2026, 6, 8, 10, 0, tzinfo=LA)  # a Monday, inside 09:00-17:00
WINDOW_CLOSED = datetime(2026, 6, 6, 10, 0, tzinfo=LA)  # a Saturday
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
        image: registry.internal/e2e/web:1.0
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
    - type: custom
      name: {METRIC}
      query: 'sum(queue_depth{{app="{APP}"}})'
      targetPerReplica: "{PER_REPLICA}"
  schedules:
    - {{cron: "0 9 * * 1-5", duration: 8h, timezone: America/Los_Angeles,
       minReplicas: {SCHEDULED_FLOOR}}}
  cooldown: {{scaleUp: 0s, scaleDown: {SCALE_DOWN_WINDOW}s}}
"""


# --- the compiled app ----------------------------------------------------------------------
def cluster_for_test(specs: dict[str, ClusterSpec]) -> ClusterSpec:
    """A schedulable cluster without GPUs."""
    for spec in specs.values():
        if spec.schedulable and parse_quantity(spec.capacity.get(GPU, "0")) == 0:
            return spec
    pytest.skip("the fleet has no schedulable general cluster")


def cluster_documents(path: Path) -> list[dict[str, Any]]:
    files = sorted(path.rglob("*.yaml")) if path.is_dir() else [path]
    yaml = YAML(typ="safe")
    return [doc for f in files for doc in yaml.load_all(f.read_text())
            if isinstance(doc, dict) and doc.get("kind") == "Cluster"]


@dataclass
class CompiledApp:
    cluster: ClusterSpec
    manifests: list[Manifest]

    def object(self, kind: str) -> dict[str, Any]:
        return next(m.obj for m in self.manifests if m.kind == kind)


@pytest.fixture(scope="module")
def compiled(fleet: fleet_mod.FleetState, fleet_specs: dict[str, ClusterSpec],
             tmp_path_factory: pytest.TempPathFactory) -> CompiledApp:
    cluster = cluster_for_test(fleet_specs)
    root = tmp_path_factory.mktemp("hpa-specs")
    (root / "platform").mkdir()
    yaml = YAML()
    with open(root / "platform" / "clusters.yaml", "w") as out:
        yaml.dump_all(cluster_documents(Path(fleet.clusters_path)), out)
    # the Project and its app in one file: the platform folder may hold both
    (root / "platform" / "web.yaml").write_text(APP_SPEC.replace("CLUSTER", cluster.name))
    result = compile_path(root, revision="e2e")
    assert result.ok, [str(d) for d in result.diagnostics]
    mine = [m for m in result.manifests if m.cluster == cluster.name]
    return CompiledApp(cluster, sorted(
        (m for m in mine if m.kind in APPLY_ORDER), key=lambda m: APPLY_ORDER.index(m.kind)))


def apply(kube: Kube, context: str, obj: dict[str, Any]) -> None:
    from kubernetes import dynamic

    resource = dynamic.DynamicClient(kube(context)).resources.get(
        api_version=obj["apiVersion"], kind=obj["kind"])
    resource.server_side_apply(body=obj, namespace=obj["metadata"].get("namespace"),
                               field_manager="pincompile-e2e", force_conflicts=True)


# --- the metrics server and the running app ------------------------------------------------
@pytest.fixture(scope="module")
def metrics(compiled: CompiledApp, kube: Kube,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[ExternalMetricsServer]:
    service, namespace = "external-metrics", "e2e-metrics"
    api = kube(compiled.cluster.context)
    server = ExternalMetricsServer(tmp_path_factory.mktemp("metrics-pki"), service, namespace)
    server.start()
    server.set(METRIC, 0)
    try:
        register(api, server, service, namespace)
        yield server
    finally:
        unregister(api, service, namespace)
        server.stop()


@dataclass
class DeploymentWatch:
    """Every (time.time(), spec.replicas, status.replicas) of one Deployment, from a
    watch."""

    events: list[tuple[float, int, int]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def latest(self) -> tuple[int, int]:
        return self.events[-1][1:] if self.events else (0, 0)

    def peak(self) -> int:
        return max((e[1] for e in self.events), default=0)


@pytest.fixture(scope="module")
def deployment(compiled: CompiledApp, metrics: ExternalMetricsServer,
               kube: Kube) -> Iterator[DeploymentWatch]:
    from kubernetes import client, watch
    from kubernetes.client.rest import ApiException

    context = compiled.cluster.context
    scheduling: Any = client.SchedulingV1Api(kube(context))
    created_classes = []
    for manifest in compiled.manifests:
        obj = manifest.obj
        if manifest.kind == "PriorityClass":  # shared by the cluster's apps: only if absent
            try:
                scheduling.create_priority_class(obj)
                created_classes.append(manifest.name)
            except ApiException as exc:
                if exc.status != 409:
                    raise
            continue
        if manifest.kind == "HorizontalPodAutoscaler":
            obj = with_scheduled_floor(obj, WINDOW_CLOSED)  # the base floor
        apply(kube, context, obj)
    apps: Any = client.AppsV1Api(kube(context))
    seen = DeploymentWatch()

    def follow() -> None:
        while not seen.stop.is_set():
            stream = watch.Watch().stream(apps.list_namespaced_deployment, PROJECT,
                                          field_selector=f"metadata.name={APP}",
                                          timeout_seconds=5)
            for event in stream:
                dep = event["object"]
                seen.events.append((time.time(), dep.spec.replicas or 0,
                                    dep.status.replicas or 0))
                if seen.stop.is_set():
                    break

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        seen.stop.set()
        thread.join(timeout=15)
        client.CoreV1Api(kube(context)).delete_namespace(PROJECT)
        for name in created_classes:
            scheduling.delete_priority_class(name)


def hpa_status(kube: Kube, context: str) -> Any:
    from kubernetes import client

    return client.AutoscalingV2Api(kube(context)).read_namespaced_horizontal_pod_autoscaler_status(
        APP, PROJECT).status


def conditions(status: Any) -> dict[str, Any]:
    return {c.type: c for c in status.conditions or []}


def served_average(status: Any) -> str | None:
    """The External metric's per-replica average as the HPA last read it."""
    for metric in status.current_metrics or []:
        if metric.type == "External" and metric.external.metric.name == METRIC:
            return str(metric.external.current.average_value)
    return None


def settle_at_base(seen: DeploymentWatch) -> None:
    wait_for("the Deployment at 1 replica", lambda: seen.latest() == (1, 1),
             timeout=3 * SCALE_DOWN_WINDOW + 90)


# --- tests ---------------------------------------------------------------------------------
def test_hpa_scales_on_the_served_metric_up_to_the_clusters_max_and_back(
    compiled: CompiledApp, metrics: ExternalMetricsServer, deployment: DeploymentWatch,
    kube: Kube
) -> None:
    context = compiled.cluster.context
    hpa = compiled.object("HorizontalPodAutoscaler")
    assert hpa["spec"]["maxReplicas"] == MAX
    started = time.time()

    # the HPA reads the metric through the aggregator: no FailedGetExternalMetric
    status = wait_for("the HPA to read the External metric",
                      lambda: (s := hpa_status(kube, context)) and served_average(s) is not None
                      and s, timeout=90)
    assert conditions(status)["ScalingActive"].status == "True"
    asked = metrics.asked(METRIC)[-1]
    assert asked.namespace == PROJECT
    assert dict(p.split("=") for p in asked.selector.split(",")) == {
        LABEL_PROJECT: PROJECT, LABEL_APP: APP, LABEL_CLUSTER: compiled.cluster.name}
    settle_at_base(deployment)

    # 40 per replica wanted at 10 each -> 4 replicas; 1000 -> 100, held at the max
    metrics.set(METRIC, 4 * PER_REPLICA)
    wait_for("4 replicas", lambda: deployment.latest() == (4, 4), timeout=90)
    metrics.set(METRIC, 1000)
    wait_for(f"{MAX} replicas", lambda: deployment.latest() == (MAX, MAX), timeout=90)
    limited = wait_for("ScalingLimited", lambda: conditions(
        hpa_status(kube, context)).get("ScalingLimited"), timeout=60)
    assert (limited.status, limited.reason) == ("True", "TooManyReplicas")
    scaled_up = time.time()

    # drop the load: the HPA reads it at its next sync but holds the replicas until its last
    # high reading is older than the cooldown (the stabilization window)
    metrics.set(METRIC, 0)
    lowered = time.time()
    wait_for("the HPA to read the lowered value",
             lambda: served_average(hpa_status(kube, context)) == "0", timeout=60)
    wait_for("the scale-down to 1 replica", lambda: deployment.latest()[0] == 1,
             timeout=SCALE_DOWN_WINDOW + 90)
    last_high = max(q.at for q in metrics.asked(METRIC) if q.at < lowered)
    down_at = next(t for t, replicas, _ in deployment.events if t > lowered and replicas < MAX)
    assert down_at >= last_high + SCALE_DOWN_WINDOW - 1, (
        f"scaled down {down_at - last_high:.1f}s after the last high reading")
    assert deployment.peak() == MAX  # never beyond the cluster's share of maxReplicas
    print(f"scale-up to {MAX}: {scaled_up - started:.0f}s after the first read; scale-down: "
          f"{down_at - lowered:.0f}s after lowering, {down_at - last_high:.0f}s after the "
          f"last high reading (window {SCALE_DOWN_WINDOW}s)")


def test_open_schedule_window_raises_the_running_hpas_floor(
    compiled: CompiledApp, metrics: ExternalMetricsServer, deployment: DeploymentWatch,
    kube: Kube
) -> None:
    context = compiled.cluster.context
    hpa = compiled.object("HorizontalPodAutoscaler")
    metrics.set(METRIC, 0)
    settle_at_base(deployment)

    floor = hpa_floor(hpa, WINDOW_OPEN.astimezone(UTC))
    assert floor is not None and floor.floor == scheduled_share(hpa) == SCHEDULED_FLOOR
    assert floor.until == datetime(2026, 6, 8, 17, 0, tzinfo=LA).astimezone(UTC)
    apply(kube, context, with_scheduled_floor(hpa, WINDOW_OPEN.astimezone(UTC)))
    wait_for(f"the floor of {SCHEDULED_FLOOR} replicas",
             lambda: deployment.latest() == (SCHEDULED_FLOOR, SCHEDULED_FLOOR), timeout=90)

    apply(kube, context, with_scheduled_floor(hpa, WINDOW_CLOSED.astimezone(UTC)))
    wait_for("the base floor again", lambda: deployment.latest()[0] == 1,
             timeout=SCALE_DOWN_WINDOW + 90)
    assert deployment.peak() <= MAX


def scheduled_share(hpa: dict[str, Any]) -> int:
    """This cluster's share of the schedule's floor, as the compiler recorded it."""
    schedules = json.loads(hpa["metadata"]["annotations"]["pincompute.io/scale-schedules"])
    return int(schedules[0]["minReplicas"])
