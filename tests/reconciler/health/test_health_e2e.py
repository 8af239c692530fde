"""Health rules on the objects a real API server returns, watched as its controllers act.

Every object is created in a fresh namespace of one general member cluster of the session
fleet, with a watch opened *before* the create (from the list's resourceVersion), so each
test sees every state the object passes through, not a sample.

The fleet's pods may lose Ready about a minute after it starts (until the fleet fix of
issue 14); the Deployment tests come first and finish well inside that window when this
module runs on its own.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from reconciler.fleet.clusters import ClusterSpec
from reconciler.fleet.nodes import GPU, parse_quantity
from reconciler.health import health_of
from reconciler.model import Health, Obj, Phase

pytestmark = pytest.mark.e2e

IMAGE = "registry.internal/e2e/app:1.0"
Kube = Callable[[str], Any]
Until = Callable[[Health], bool]


class Watched:
    """One named object watched from before it exists; keeps every health it was seen in
    (consecutive repeats collapsed) and the last raw object."""

    def __init__(self, list_fn: Callable[..., Any], namespace: str, name: str) -> None:
        self.list_fn, self.namespace, self.name = list_fn, namespace, name
        self.selector = f"metadata.name={name}"
        self.rv = list_fn(namespace, field_selector=self.selector).metadata.resource_version
        self.history: list[Health] = []
        self.last: Obj | None = None

    def _events(self, seconds: float) -> Iterator[Obj]:
        from kubernetes import watch

        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            stream = watch.Watch()
            for event in stream.stream(self.list_fn, self.namespace,
                                       field_selector=self.selector, resource_version=self.rv,
                                       timeout_seconds=max(1, int(left)),
                                       _request_timeout=left + 10):
                raw: Obj = event["raw_object"]
                self.rv = raw["metadata"]["resourceVersion"]
                if event["type"] in ("ADDED", "MODIFIED"):
                    self.last = raw
                    health = health_of(raw)
                    assert health is not None, f"no rule for {raw['kind']}"
                    if not self.history or self.history[-1] != health:
                        self.history.append(health)
                    yield raw
                if time.monotonic() > deadline:
                    stream.stop()

    def until(self, done: Until, timeout: float = 60.0) -> Health:
        """Watch the events after those already seen until one's health satisfies ``done``;
        fail after ``timeout``."""
        for _ in self._events(timeout):
            if done(self.history[-1]):
                return self.history[-1]
        pytest.fail(f"{self.name}: not there after {timeout:.0f}s; seen: {self.history}")

    def hold(self, seconds: float) -> list[Health]:
        """Every health seen during the next ``seconds`` (starting with the current one)."""
        start = len(self.history) - 1
        for _ in self._events(seconds):
            pass
        return self.history[max(start, 0):]


def is_(wanted: Phase) -> Until:
    return lambda health: health.phase is wanted


@pytest.fixture(scope="module")
def cluster(fleet_specs: dict[str, ClusterSpec]) -> ClusterSpec:
    general = [s for s in fleet_specs.values()
               if s.schedulable and parse_quantity(s.capacity.get(GPU, "0")) == 0]
    return general[0]


@pytest.fixture(scope="module")
def api(kube: Kube, cluster: ClusterSpec) -> Any:
    return kube(cluster.context)


@pytest.fixture(scope="module")
def ns(api: Any) -> Iterator[str]:
    from kubernetes import client

    name = f"health-{uuid.uuid4().hex[:8]}"
    core: Any = client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": name}})
    yield name
    core.delete_namespace(name)


def container(name: str = "main") -> dict[str, Any]:
    return {"name": name, "image": IMAGE,
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}


def deployment(name: str, replicas: int, **pod_spec: Any) -> Obj:
    labels = {"app": name}
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [container()], **pod_spec}}},
    }


def pods(api: Any, ns: str, selector: str) -> list[Obj]:
    """The pods matching ``selector``, as the API server returns them (plain data)."""
    from kubernetes import client

    core: Any = client.CoreV1Api(api)
    listed = core.list_namespaced_pod(ns, label_selector=selector, _preload_content=False)
    items: list[Obj] = json.loads(listed.data)["items"]
    for item in items:  # a list's items carry no apiVersion/kind
        item.update(apiVersion="v1", kind="Pod")
    return items


def test_deployment_progresses_then_becomes_healthy_and_a_new_generation_is_not_trusted_early(
        api: Any, ns: str) -> None:
    from kubernetes import client

    apps: Any = client.AppsV1Api(api)
    watched = Watched(apps.list_namespaced_deployment, ns, "web")
    apps.create_namespaced_deployment(ns, deployment("web", 3))
    assert watched.until(is_(Phase.HEALTHY)) == Health(Phase.HEALTHY)
    assert watched.history[0] == Health(
        Phase.PROGRESSING, "waiting for the controller to observe the new object")
    assert {h.phase for h in watched.history} == {Phase.PROGRESSING, Phase.HEALTHY}
    assert [health_of(p) for p in pods(api, ns, "app=web")] == [Health(Phase.HEALTHY)] * 3

    # a new pod template: the first state after the write still carries the old status,
    # which must not pass for the new generation's
    seen = len(watched.history)
    apps.patch_namespaced_deployment("web", ns, {"spec": {"template": {"spec": {
        "containers": [{**container(), "image": IMAGE.replace("1.0", "1.1")}]}}}})
    assert watched.until(is_(Phase.HEALTHY)) == Health(Phase.HEALTHY)
    rollout = watched.history[seen:]
    assert rollout[0] == Health(Phase.PROGRESSING,
                                "waiting for the controller to observe generation 2 "
                                "(observed 1)")
    assert len(rollout) >= 3, f"the rollout went straight to Healthy: {rollout}"
    assert all(h.phase is Phase.PROGRESSING for h in rollout[:-1])


def test_deployment_that_cannot_schedule_is_degraded_at_its_progress_deadline(
        api: Any, ns: str) -> None:
    from kubernetes import client

    apps: Any = client.AppsV1Api(api)
    watched = Watched(apps.list_namespaced_deployment, ns, "stuck")
    body = deployment("stuck", 2, nodeSelector={"pincompute.io/node-pool": "no-such-pool"})
    body["spec"]["progressDeadlineSeconds"] = 5
    start = time.monotonic()
    apps.create_namespaced_deployment(ns, body)
    degraded = watched.until(is_(Phase.DEGRADED), timeout=60)
    assert time.monotonic() - start >= 4, "Degraded before the progress deadline"
    assert re.fullmatch(r'ReplicaSet "stuck-[a-z0-9]+" has timed out progressing\.',
                        degraded.message), degraded.message
    assert watched.history[0].phase is Phase.PROGRESSING
    # it stays Degraded: the controller keeps the condition while nothing progresses
    assert {h.phase for h in watched.hold(5)} == {Phase.DEGRADED}
    # and its pods say why, in the scheduler's words
    stuck_pods = pods(api, ns, "app=stuck")
    assert len(stuck_pods) == 2
    for pod in stuck_pods:
        health = health_of(pod)
        assert health is not None and health.phase is Phase.PROGRESSING
        assert "didn't match Pod's node affinity/selector" in health.message, health.message


def test_statefulset_becomes_healthy(api: Any, ns: str) -> None:
    from kubernetes import client

    apps: Any = client.AppsV1Api(api)
    watched = Watched(apps.list_namespaced_stateful_set, ns, "index")
    body = deployment("index", 2)
    body["spec"]["serviceName"] = "index"
    apps.create_namespaced_stateful_set(ns, body)
    watched.until(is_(Phase.HEALTHY))
    assert watched.history[0].phase is Phase.PROGRESSING


def test_pod_disruption_budgets_over_ready_pods_are_healthy(api: Any, ns: str) -> None:
    from kubernetes import client

    apps: Any = client.AppsV1Api(api)
    policy: Any = client.PolicyV1Api(api)
    pods_ready = Watched(apps.list_namespaced_deployment, ns, "guarded")
    apps.create_namespaced_deployment(ns, deployment("guarded", 2))
    pods_ready.until(is_(Phase.HEALTHY))
    budgets = {}
    for name, min_available in (("loose", 1), ("tight", 2)):
        budgets[name] = Watched(policy.list_namespaced_pod_disruption_budget, ns, name)
        policy.create_namespaced_pod_disruption_budget(ns, {
            "metadata": {"name": name},
            "spec": {"minAvailable": min_available,
                     "selector": {"matchLabels": {"app": "guarded"}}}})
    assert budgets["loose"].until(is_(Phase.HEALTHY)) == Health(Phase.HEALTHY)
    assert budgets["loose"].last and budgets["loose"].last["status"]["currentHealthy"] == 2
    # every pod required: healthy, but no eviction may proceed
    assert budgets["tight"].until(is_(Phase.HEALTHY)) == Health(
        Phase.HEALTHY, "no voluntary disruption allowed: node drains will wait")
    for budget in budgets.values():
        assert budget.history[0] == Health(
            Phase.PROGRESSING, "waiting for the controller to observe the new object")


def job(name: str, **annotations: str) -> Obj:
    return {"metadata": {"name": name},
            "spec": {"backoffLimit": 0, "template": {
                "metadata": {"annotations": annotations},
                "spec": {"restartPolicy": "Never", "containers": [container()]}}}}


def test_job_that_completes_is_completed(api: Any, ns: str) -> None:
    from kubernetes import client

    batch: Any = client.BatchV1Api(api)
    watched = Watched(batch.list_namespaced_job, ns, "done")
    batch.create_namespaced_job(ns, job("done"))
    watched.until(is_(Phase.COMPLETED))
    assert watched.history[0].phase is Phase.PROGRESSING
    assert not any(h.phase in (Phase.FAILED, Phase.DEGRADED) for h in watched.history)


def test_job_whose_pod_fails_is_failed_with_the_controllers_reason(api: Any, ns: str) -> None:
    from kubernetes import client

    batch: Any = client.BatchV1Api(api)
    watched = Watched(batch.list_namespaced_job, ns, "broken")
    # the fleet's kwok stage "pod-fail" ends a pod with this annotation with that exit code
    batch.create_namespaced_job(ns, job("broken", **{"kwok.pincompute.io/exit-code": "3"}))
    failed = watched.until(is_(Phase.FAILED))
    assert failed == Health(Phase.FAILED,
                            "BackoffLimitExceeded: Job has reached the specified backoff limit")
    assert watched.history[0].phase is Phase.PROGRESSING
    assert [health_of(p) for p in pods(api, ns, "job-name=broken")] == [
        Health(Phase.FAILED, "container main failed with exit code 3")]



def claim(api: Any, ns: str, name: str, storage_class: str) -> Watched:
    """Create a 1Gi claim of ``storage_class`` and watch it from before its creation."""
    from kubernetes import client

    core: Any = client.CoreV1Api(api)
    watched = Watched(core.list_namespaced_persistent_volume_claim, ns, name)
    core.create_namespaced_persistent_volume_claim(ns, {
        "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": storage_class,
                 "resources": {"requests": {"storage": "1Gi"}}}})
    return watched


def test_claim_is_progressing_until_bound(api: Any, ns: str) -> None:
    watched = claim(api, ns, "data", "pincompute-block")
    assert watched.until(is_(Phase.HEALTHY)) == Health(Phase.HEALTHY)
    assert watched.history[0] == Health(Phase.PROGRESSING, "waiting for a volume to be bound")


def test_claim_nobody_provisions_stays_progressing(api: Any, ns: str) -> None:
    watched = claim(api, ns, "orphan", "no-such-class")
    assert {h.phase for h in watched.hold(4)} == {Phase.PROGRESSING}


def autoscaler(api: Any, ns: str, name: str, replicas: int) -> Watched:
    """A Deployment of ``replicas`` and a CPU-based HPA on it, watched from before it exists."""
    from kubernetes import client

    apps: Any = client.AppsV1Api(api)
    scaling: Any = client.AutoscalingV2Api(api)
    apps.create_namespaced_deployment(ns, deployment(name, replicas))
    watched = Watched(scaling.list_namespaced_horizontal_pod_autoscaler, ns, name)
    scaling.create_namespaced_horizontal_pod_autoscaler(ns, {
        "metadata": {"name": name},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                    "name": name},
                 "minReplicas": 1, "maxReplicas": 4,
                 "metrics": [{"type": "Resource", "resource": {
                     "name": "cpu",
                     "target": {"type": "Utilization", "averageUtilization": 60}}}]}})
    return watched


def test_autoscalers_report_what_the_hpa_controller_found(api: Any, ns: str) -> None:
    # both at once: the HPA controller takes a new HPA up only after its resync period (15s)
    scaled = autoscaler(api, ns, "scaled", 1)
    parked = autoscaler(api, ns, "parked", 0)

    judged = scaled.until(lambda h: h.phase is not Phase.PROGRESSING)
    assert scaled.history[0] == Health(Phase.PROGRESSING,
                                       "waiting for the autoscaler's first assessment")
    assert scaled.last is not None
    active = {c["type"]: c for c in scaled.last["status"]["conditions"]}["ScalingActive"]
    if active["status"] == "False":
        # the fleet serves no resource metrics API: the controller cannot read CPU usage
        assert active["reason"] == "FailedGetResourceMetric"
        assert judged == Health(Phase.DEGRADED, active["message"])
        assert "metrics" in judged.message
    else:
        assert judged.phase is Phase.HEALTHY

    # a target scaled to zero switches the autoscaler off
    assert parked.until(is_(Phase.SUSPENDED)) == Health(
        Phase.SUSPENDED, "scaling is disabled since the replica count of the target is zero")
    assert parked.history[0].phase is Phase.PROGRESSING


def test_services(api: Any, ns: str) -> None:
    from kubernetes import client

    core: Any = client.CoreV1Api(api)
    for kind in ("ClusterIP", "LoadBalancer"):
        name = kind.lower()
        watched = Watched(core.list_namespaced_service, ns, name)
        core.create_namespaced_service(ns, {
            "metadata": {"name": name},
            "spec": {"type": kind, "selector": {"app": "web"}, "ports": [{"port": 80}]}})
        seen = {h.phase for h in watched.hold(2)}
        # the fleet runs no load-balancer controller: the address never comes
        assert seen == {Phase.HEALTHY if kind == "ClusterIP" else Phase.PROGRESSING}
