"""The fleet stays healthy over time: nodes never leave Ready while kwok runs, pods stay
Ready, and pods recover after a node blip. Plus the fault-injection API (stop/start a
cluster's API server or kwok) and the `-never-ready` image convention."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from click.testing import CliRunner

from reconciler.fleet import control
from reconciler.fleet import fleet as fleet_mod
from reconciler.fleet.cli import fleet as fleet_cli
from reconciler.fleet.clusters import ClusterSpec
from reconciler.fleet.health import is_ready, node_health
from reconciler.fleet.nodes import GPU, parse_quantity
from reconciler.fleet.ports import port_is_free
from reconciler.fleet.processes import is_alive
from reconciler.fleet.watch import ReadinessWatch
from tests.support.fleet import timer
from tests.support.wait import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.fleet_alone(
    "stops a member cluster's kwok: its nodes go NotReady")]

IMAGE = "registry.internal/e2e/app:1.0"
NEVER_READY = "registry.internal/e2e/app:1.5-never-ready"
Kube = Callable[[str], Any]


def members(specs: dict[str, ClusterSpec]) -> list[ClusterSpec]:
    """Member clusters that take workloads (not cordoned)."""
    return [s for s in specs.values() if s.schedulable]


def plain_cluster(specs: dict[str, ClusterSpec], last: bool = True) -> ClusterSpec:
    found = [s for s in members(specs) if parse_quantity(s.capacity.get(GPU, "0")) == 0]
    return found[-1] if last else found[0]


def pod_template(labels: dict[str, str], image: str = IMAGE,
                 annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"labels": labels, "annotations": annotations or {}},
            "spec": {"containers": [{"name": "main", "image": image, "resources": {
                "requests": {"cpu": "10m", "memory": "16Mi"}}}]}}


def create_workloads(kube: Kube, context: str, ns: str, job: bool = True) -> None:
    """A 3-replica Deployment, a DaemonSet and (optionally) a long-running Job in ``ns``."""
    from kubernetes import client

    api = kube(context)
    client.CoreV1Api(api).create_namespace({"metadata": {"name": ns}})
    apps: Any = client.AppsV1Api(api)
    apps.create_namespaced_deployment(ns, {
        "metadata": {"name": "web"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                 "template": pod_template({"app": "web"})}})
    apps.create_namespaced_daemon_set(ns, {
        "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}},
                 "template": pod_template({"app": "agent"})}})
    if job:
        template = pod_template({"app": "batch"},
                                annotations={"pod-complete.stage.kwok.x-k8s.io/delay": "1h"})
        template["spec"]["restartPolicy"] = "Never"
        client.BatchV1Api(api).create_namespaced_job(ns, {
            "metadata": {"name": "batch"},
            "spec": {"parallelism": 2, "completions": 2, "backoffLimit": 0,
                     "template": template}})


def _workloads(kube: Kube, context: str, ns: str) -> tuple[Any, Any, Any]:
    """The Deployment's and the DaemonSet's status, and the namespace's pods."""
    from kubernetes import client

    api = kube(context)
    return (client.AppsV1Api(api).read_namespaced_deployment_status("web", ns),
            client.AppsV1Api(api).read_namespaced_daemon_set_status("agent", ns),
            client.CoreV1Api(api).list_namespaced_pod(ns).items)


def workloads_ready(kube: Kube, context: str, ns: str) -> bool:
    """Deployment available, every DaemonSet pod Ready, both Job pods Running and Ready."""
    dep, ds, pods = _workloads(kube, context, ns)
    batch = [p for p in pods if p.metadata.labels.get("app") == "batch"]
    jobs_ok = not batch or (len(batch) == 2 and all(is_ready(p) for p in batch))
    return bool(dep.status.ready_replicas == 3 and ds.status.desired_number_scheduled
                and ds.status.number_ready == ds.status.desired_number_scheduled and jobs_ok)


def readiness_of(kube: Kube, context: str, ns: str) -> str:
    """Which of the namespace's workloads and pods are Ready (for a timeout's message)."""
    dep, ds, pods = _workloads(kube, context, ns)
    shown = ", ".join(f"{p.metadata.name} {p.status.phase} ready={is_ready(p)}" for p in pods)
    return (f"deployment ready {dep.status.ready_replicas}/3, daemonset ready "
            f"{ds.status.number_ready}/{ds.status.desired_number_scheduled}; pods: {shown}")


def delete_namespace(kube: Kube, context: str, ns: str) -> None:
    from kubernetes import client

    client.CoreV1Api(kube(context)).delete_namespace(ns)


@pytest.fixture(scope="module")
def grace(fleet: fleet_mod.FleetState) -> float:
    """The node controller's grace period, as the host's controller-manager runs it."""
    return control.node_monitor_grace_period(fleet, "host")


def test_nodes_and_pods_stay_ready_for_three_grace_periods(
    fleet: fleet_mod.FleetState, fleet_specs: dict[str, ClusterSpec], kube: Kube,
    grace: float,
) -> None:
    """Watch (not sample: a flap lasts 0.1 s) every node of every cluster and every pod of
    a Deployment, a DaemonSet and a Job on each member cluster for 3x the grace period."""
    ns = f"soak-{uuid.uuid4().hex[:6]}"
    clusters = members(fleet_specs)
    for spec in clusters:
        create_workloads(kube, spec.context, ns)
    try:
        for spec in clusters:
            wait_for(lambda spec=spec: workloads_ready(kube, spec.context, ns), 120,
                     f"the soak workloads on {spec.name} to be Ready")
        watch = ReadinessWatch(fleet, namespaces={ns}).start()
        tracked = [k for k, ready in watch.ready_now("Pod").items() if ready]
        assert len(tracked) >= 5 * len(clusters)  # 3 web + >=1 agent + 2 batch per cluster
        duration = 3 * grace + 5
        time.sleep(duration)
        # node Leases are being renewed right now (a quarter of the lease duration apart)
        for runtime in fleet.clusters:
            api = fleet_mod.api_client(fleet, runtime.context)
            try:
                health = node_health(api, runtime.name)
            finally:
                api.close()
            assert health.healthy and not health.no_lease, health.summary()
            assert health.oldest_lease_age is not None
            assert health.oldest_lease_age < timer(fleet, "node_lease_seconds"), health.summary()
        watch.stop()
    finally:
        for spec in clusters:
            delete_namespace(kube, spec.context, ns)
    nodes_lost = watch.of("Node")
    pods_lost = watch.of("Pod")
    report = "\n".join(map(str, nodes_lost + pods_lost))
    assert not nodes_lost, (f"{len(nodes_lost)} node transitions away from Ready in "
                            f"{duration:.0f}s:\n{report}")
    assert not pods_lost, f"{len(pods_lost)} pods lost Ready in {duration:.0f}s:\n{report}"
    still = watch.ready_now("Pod")
    assert all(still[key] for key in tracked)
    assert not [e for e in watch.errors if "expired" in e], watch.errors


def test_pods_become_ready_again_after_their_nodes_were_not_ready(
    fleet: fleet_mod.FleetState, fleet_specs: dict[str, ClusterSpec], kube: Kube,
    grace: float,
) -> None:
    """Stop one cluster's kwok until the node controller marks its nodes NotReady and its
    pods not Ready; start it again: the same pods (not replacements) turn Ready again."""
    from kubernetes import client

    spec = plain_cluster(fleet_specs)
    ns = f"blip-{uuid.uuid4().hex[:6]}"
    create_workloads(kube, spec.context, ns, job=False)
    core: Any = client.CoreV1Api(kube(spec.context))
    try:
        wait_for(lambda: workloads_ready(kube, spec.context, ns), 90, "the workloads to be Ready")
        before = {p.metadata.uid for p in core.list_namespaced_pod(ns).items}
        watch = ReadinessWatch(fleet, clusters=[spec.name], namespaces={ns}).start()
        control.stop_component(fleet, spec.name, "kwok")
        try:
            def nodes_not_ready() -> bool:
                return not any(is_ready(n) for n in core.list_node().items)

            def pods_not_ready() -> bool:
                return not any(is_ready(p) for p in core.list_namespaced_pod(ns).items)

            wait_for(nodes_not_ready, grace + 60, "the nodes to go NotReady")
            wait_for(pods_not_ready, 60, "the node controller to mark the pods not Ready")
            status = CliRunner().invoke(fleet_cli, ["status", "--dir", str(fleet.dir)])
            assert status.exit_code == 3 and "NOT Ready: " in status.output, status.output
        finally:
            control.start_component(fleet, spec.name, "kwok")
        wait_for(lambda: all(is_ready(n) for n in core.list_node().items), 90,
                 "the nodes to be Ready again")
        # kwok makes every pod Ready again after it restarts; on a loaded machine (the whole
        # suite running) that has taken over 90 s
        wait_for(lambda: workloads_ready(kube, spec.context, ns), 180,
                 "the pods to be Ready again",
                 describe=lambda: readiness_of(kube, spec.context, ns))
        after = core.list_namespaced_pod(ns).items
        assert {p.metadata.uid for p in after} == before, "pods were replaced, not recovered"
        assert all(p.status.phase == "Running" and is_ready(p) for p in after)
        watch.stop()
        assert len(watch.of("Node", "not-ready")) >= len(core.list_node().items)
        assert {t.name for t in watch.of("Pod", "not-ready")} == {
            f"{ns}/{p.metadata.name}" for p in after}
        assert not watch.of("Pod", "deleted")
    finally:
        delete_namespace(kube, spec.context, ns)


def test_stopped_api_server_is_unreachable_and_comes_back_on_the_same_port(
    fleet: fleet_mod.FleetState, fleet_specs: dict[str, ClusterSpec], kube: Kube,
) -> None:
    from kubernetes import client
    from urllib3.exceptions import MaxRetryError

    spec = plain_cluster(fleet_specs, last=False)
    runtime = fleet.cluster(spec.name)
    core: Any = client.CoreV1Api(kube(spec.context))
    ns = f"apistop-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": ns}})
    core.create_namespaced_config_map(ns, {"metadata": {"name": "marker"},
                                           "data": {"k": "v"}})
    old = next(p for p in fleet.procs if p.name == f"kube-apiserver[{spec.name}]")
    watchers = {p.name: p.pid for p in fleet.procs
                if p.name in {f"{w}[{spec.name}]" for w in control.WATCHERS}}
    runner = CliRunner()
    result = runner.invoke(fleet_cli, ["stop-cluster", spec.name, "--dir", str(fleet.dir)])
    assert result.exit_code == 0, result.output
    try:
        assert not is_alive(old)
        with pytest.raises(MaxRetryError):
            core.list_namespace(_request_timeout=3)
        status = runner.invoke(fleet_cli, ["status", "--dir", str(fleet.dir)])
        assert status.exit_code == 3, status.output
        assert f"stopped: kube-apiserver[{spec.name}]" in status.output
    finally:
        result = runner.invoke(fleet_cli, ["start-cluster", spec.name,
                                           "--dir", str(fleet.dir)])
        current = fleet_mod.read_state(fleet.dir)
        assert current is not None
        fleet.procs[:] = current.procs  # the CLI changed state.json, not this session's copy
    assert result.exit_code == 0, result.output
    assert current.cluster(spec.name).port == runtime.port
    assert not port_is_free(runtime.port)
    # the same kubeconfig (certificates) works, and the data is still there
    assert core.read_namespaced_config_map("marker", ns).data == {"k": "v"}
    new = next(p for p in fleet.procs if p.name == f"kube-apiserver[{spec.name}]")
    assert new.pid != old.pid and is_alive(new)
    siblings = [p for p in fleet.procs if p.name.endswith(f"[{spec.name}]")]
    # every component of a member cluster: the control plane, kwok and metrics-server
    assert len(siblings) == len(runtime.components) >= 5
    assert all(is_alive(p) for p in siblings)
    # what watches it was restarted, so it watches at once (kwok renews the node Leases)
    assert len(watchers) == 3
    assert all(p.pid != watchers[p.name] for p in siblings if p.name in watchers)
    assert fleet_mod.is_running(fleet)
    core.delete_namespace(ns)


def test_never_ready_image_runs_but_stalls_a_rollout(
    fleet: fleet_mod.FleetState, fleet_specs: dict[str, ClusterSpec], kube: Kube,
) -> None:
    """A rollout to an image tagged `*-never-ready` stalls like a broken release: the new
    pod runs, never turns Ready, and the Deployment exceeds its progress deadline while
    the old pods keep serving."""
    from kubernetes import client

    spec = plain_cluster(fleet_specs, last=False)
    ns = f"never-{uuid.uuid4().hex[:6]}"
    api = kube(spec.context)
    core: Any = client.CoreV1Api(api)
    apps: Any = client.AppsV1Api(api)
    core.create_namespace({"metadata": {"name": ns}})
    try:
        apps.create_namespaced_deployment(ns, {
            "metadata": {"name": "web"},
            "spec": {"replicas": 3, "progressDeadlineSeconds": 15,
                     "selector": {"matchLabels": {"app": "web"}},
                     "template": pod_template({"app": "web"})}})
        wait_for(lambda: apps.read_namespaced_deployment_status(
            "web", ns).status.available_replicas == 3, 90, "v1 to be available")
        watch = ReadinessWatch(fleet, clusters=[spec.name], namespaces={ns}).start()
        apps.patch_namespaced_deployment("web", ns, {"spec": {"template": {"spec": {
            "containers": [{"name": "main", "image": NEVER_READY}]}}}})

        def deadline_exceeded() -> bool:
            dep = apps.read_namespaced_deployment_status("web", ns)
            return any(c.type == "Progressing" and c.status == "False"
                       and c.reason == "ProgressDeadlineExceeded"
                       for c in dep.status.conditions or [])

        wait_for(deadline_exceeded, 90, "the rollout to exceed its progress deadline")
        watch.stop()
        pods = core.list_namespaced_pod(ns).items
        broken = [p for p in pods if p.spec.containers[0].image == NEVER_READY]
        assert broken, "the rollout created no pod of the new image"
        for pod in broken:
            assert pod.status.phase == "Running" and not is_ready(pod)
            status = pod.status.container_statuses[0]
            assert status.state.running is not None and status.ready is False
        new_keys = {f"{spec.name}/{ns}/{p.metadata.name}" for p in broken}
        assert not new_keys & set(watch.became_ready("Pod"))
        dep = apps.read_namespaced_deployment_status("web", ns)
        assert dep.status.available_replicas == 3 and dep.status.updated_replicas == len(broken)
        assert not watch.of("Pod")  # the old pods kept serving
    finally:
        core.delete_namespace(ns)


def test_status_reports_ready_nodes_and_lease_age(fleet: fleet_mod.FleetState) -> None:
    import json

    result = CliRunner().invoke(fleet_cli, ["status", "--dir", str(fleet.dir), "-o", "json"])
    assert result.exit_code == 0, result.output
    info = json.loads(result.output)
    assert {c["name"] for c in info["clusters"]} == {c.name for c in fleet.clusters}
    for cluster in info["clusters"]:
        nodes = cluster["nodes"]
        assert nodes["total"] > 0 and nodes["ready"] == nodes["total"], cluster
        assert 0 <= nodes["oldestLeaseRenewalSeconds"] < timer(fleet, "node_lease_seconds")
    table = CliRunner().invoke(fleet_cli, ["status", "--dir", str(fleet.dir)])
    assert table.exit_code == 0 and "Ready, oldest lease renewal" in table.output
