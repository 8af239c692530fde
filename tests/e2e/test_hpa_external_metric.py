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
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from metrics_server import ExternalMetricsServer, register, unregister

from pincompile.manifest import LABEL_APP, LABEL_CLUSTER, LABEL_PROJECT, Manifest
from reconciler.fleet import fleet as fleet_mod
from reconciler.fleet.clusters import ClusterSpec
from reconciler.scaling import hpa_floor, with_scheduled_floor
from tests.e2e.support import (
    apply_all,
    compile_for,
    general_cluster,
    project_and_app,
    server_side_apply,
)
from tests.support.wait import wait_for

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
@dataclass
class CompiledApp:
    cluster: ClusterSpec
    manifests: list[Manifest]

    def object(self, kind: str) -> dict[str, Any]:
        return next(m.obj for m in self.manifests if m.kind == kind)


@pytest.fixture(scope="module")
def compiled(fleet: fleet_mod.FleetState, fleet_specs: dict[str, ClusterSpec],
             tmp_path_factory: pytest.TempPathFactory) -> CompiledApp:
    cluster = general_cluster(fleet_specs)
    specs = project_and_app(PROJECT, APP, cluster.name, "registry.internal/e2e/web:1.0")
    return CompiledApp(cluster, compile_for(fleet.clusters_path, cluster.name,
                                            specs + SCALER_SPEC,
                                            tmp_path_factory.mktemp("hpa-specs")))


def apply(kube: Kube, context: str, obj: dict[str, Any]) -> None:
    server_side_apply(kube(context), obj)


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

    context = compiled.cluster.context

    def at_base_floor(manifest: Manifest) -> dict[str, Any]:
        if manifest.kind == "HorizontalPodAutoscaler":
            return with_scheduled_floor(manifest.obj, WINDOW_CLOSED)  # the base floor
        return manifest.obj

    created_classes = apply_all(kube(context), compiled.manifests, at_base_floor)
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
            client.SchedulingV1Api(kube(context)).delete_priority_class(name)


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
    wait_for(lambda: seen.latest() == (1, 1), 3 * SCALE_DOWN_WINDOW + 90,
             "the Deployment at 1 replica")


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
    status = wait_for(lambda: (s := hpa_status(kube, context)) and served_average(s) is not None
                      and s, 90, "the HPA to read the External metric")
    assert conditions(status)["ScalingActive"].status == "True"
    asked = metrics.asked(METRIC)[-1]
    assert asked.namespace == PROJECT
    assert dict(p.split("=") for p in asked.selector.split(",")) == {
        LABEL_PROJECT: PROJECT, LABEL_APP: APP, LABEL_CLUSTER: compiled.cluster.name}
    settle_at_base(deployment)

    # 40 per replica wanted at 10 each -> 4 replicas; 1000 -> 100, held at the max
    metrics.set(METRIC, 4 * PER_REPLICA)
    wait_for(lambda: deployment.latest() == (4, 4), 90, "4 replicas")
    metrics.set(METRIC, 1000)
    wait_for(lambda: deployment.latest() == (MAX, MAX), 90, f"{MAX} replicas")
    limited = wait_for(lambda: conditions(
        hpa_status(kube, context)).get("ScalingLimited"), 60, "ScalingLimited")
    assert (limited.status, limited.reason) == ("True", "TooManyReplicas")
    scaled_up = time.time()

    # drop the load: the HPA reads it at its next sync but holds the replicas until its last
    # high reading is older than the cooldown (the stabilization window)
    metrics.set(METRIC, 0)
    lowered = time.time()
    wait_for(lambda: served_average(hpa_status(kube, context)) == "0", 60,
             "the HPA to read the lowered value")
    wait_for(lambda: deployment.latest()[0] == 1, SCALE_DOWN_WINDOW + 90,
             "the scale-down to 1 replica")
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
    wait_for(lambda: deployment.latest() == (SCHEDULED_FLOOR, SCHEDULED_FLOOR), 90,
             f"the floor of {SCHEDULED_FLOOR} replicas")

    apply(kube, context, with_scheduled_floor(hpa, WINDOW_CLOSED.astimezone(UTC)))
    wait_for(lambda: deployment.latest()[0] == 1, SCALE_DOWN_WINDOW + 90, "the base floor again")
    assert deployment.peak() <= MAX


def scheduled_share(hpa: dict[str, Any]) -> int:
    """This cluster's share of the schedule's floor, as the compiler recorded it."""
    schedules = json.loads(hpa["metadata"]["annotations"]["pincompute.io/scale-schedules"])
    return int(schedules[0]["minReplicas"])
