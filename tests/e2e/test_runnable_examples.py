# ruff: noqa: B023  (each lambda is polled by wait_for before the loop moves on)
"""The promise of ``validate``: every example spec, compiled and server-side applied to the
local fleet, is accepted by the real API servers (their namespaces enforcing Pod Security
``restricted`` but for the system project's); its pods are scheduled and become Ready;
then every image is bumped and every Deployment and DaemonSet rolls out.

What is not covered (no operator runs in the fleet): TFJob/PyTorchJob objects are accepted
but make no pods; CronJobs are accepted but run on their schedule only; a Job's pod template
is immutable, so bumped Jobs are not re-applied (the reconciler replaces them).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.runnable_apply import (
    Applier,
    Kube,
    bump_images,
    by_cluster,
    compile_tree,
    delete_namespaces,
    deployment_rolled_out,
    platform_copy,
    ready,
)
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e

#: Kinds whose pods the fleet runs (no operator for TFJob/PyTorchJob; CronJobs wait).
ROLLED = ("Deployment", "DaemonSet")


def _workloads(objs: list[dict[str, Any]], kind: str) -> list[tuple[str, str]]:
    """Workloads of ``kind`` that run pods: a paused (held) or stopped (0 replicas) app
    runs none by design."""
    return [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in objs
            if o["kind"] == kind and not (o.get("spec") or {}).get("paused")
            and (o.get("spec") or {}).get("replicas", 1) != 0]


def _bumped(objs: list[dict[str, Any]], kind: str) -> set[tuple[str, str]]:
    """Workloads of ``kind`` whose desired pod template runs a bumped image."""
    return {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in objs
            if o["kind"] == kind and any(
                c.get("image", "").endswith(":e2e-bumped")
                for c in o["spec"]["template"]["spec"].get("containers", []))}


def _daemon_rolled_out(apps: Any, ns: str, name: str) -> bool:
    d = apps.read_namespaced_daemon_set(name, ns)
    st = d.status
    return bool((st.observed_generation or 0) >= d.metadata.generation
                and st.desired_number_scheduled > 0
                and st.updated_number_scheduled == st.desired_number_scheduled
                and st.number_available == st.desired_number_scheduled)


def test_every_example_runs_and_rolls_out(fleet: Any, kube: Kube, tmp_path: Path) -> None:
    from kubernetes import client

    root = platform_copy(tmp_path)
    compiled = by_cluster(compile_tree(root).manifests)
    contexts = {c: c for c in compiled}  # example clusters use their name as context
    namespaces = sorted({o["metadata"]["name"] for objs in compiled.values() for o in objs
                         if o["kind"] == "Namespace"})
    # the pods below run under Pod Security restricted, except in platform-system's
    # namespace, which its daemons' host network earns privileged
    levels = {o["metadata"]["name"]: o["metadata"]["labels"]["pod-security.kubernetes.io/enforce"]
              for objs in compiled.values() for o in objs if o["kind"] == "Namespace"}
    assert {n: level for n, level in levels.items() if level != "restricted"} == {
        "pincompute-system": "privileged"}
    started = time.monotonic()
    try:
        applied = 0
        for cluster, objs in compiled.items():
            applied += Applier(fleet, contexts[cluster]).apply_all(objs)
        assert applied == sum(len(v) for v in compiled.values())

        # every pod of every Deployment, DaemonSet, Job and Pod is scheduled and Ready
        for cluster, objs in compiled.items():
            apps: Any = client.AppsV1Api(kube(cluster))
            core: Any = client.CoreV1Api(kube(cluster))
            for ns, name in _workloads(objs, "Deployment"):
                wait_for(lambda: deployment_rolled_out(apps, ns, name), 120,
                         f"{cluster} Deployment {ns}/{name} available", interval=1.0)
            for ns, name in _workloads(objs, "DaemonSet"):
                wait_for(lambda: _daemon_rolled_out(apps, ns, name), 120,
                         f"{cluster} DaemonSet {ns}/{name} available", interval=1.0)
            for ns, name in _workloads(objs, "Pod"):
                wait_for(lambda: ready(core.read_namespaced_pod(name, ns)), 120,
                         f"{cluster} Pod {ns}/{name} Ready", interval=1.0)
            for ns, name in _workloads(objs, "Job"):
                wait_for(lambda: (core.list_namespaced_pod(
                             ns, label_selector=f"job-name={name}").items), 120,
                         f"{cluster} Job {ns}/{name} runs pods", interval=1.0)
        print(f"examples: {applied} objects applied, all pods Ready after "
              f"{time.monotonic() - started:.0f}s")

        # bump every image; every Deployment and DaemonSet rolls out
        assert bump_images(root) >= 10
        bumped = by_cluster(compile_tree(root).manifests)
        for cluster, objs in bumped.items():
            Applier(fleet, cluster).apply_all(objs, skip=lambda o: o["kind"] == "Job")
        for cluster, objs in bumped.items():
            apps = client.AppsV1Api(kube(cluster))
            for kind in ROLLED:
                for ns, name in _workloads(objs, kind):
                    if (ns, name) not in _bumped(objs, kind):
                        continue  # e.g. a platform sidecar daemon: no app image in it
                    check = deployment_rolled_out if kind == "Deployment" else (
                        _daemon_rolled_out)
                    wait_for(lambda: check(apps, ns, name), 120,
                             f"{cluster} {kind} {ns}/{name} rolled out to the bumped image",
                             interval=1.0)
                    read = (apps.read_namespaced_deployment if kind == "Deployment"
                            else apps.read_namespaced_daemon_set)
                    images = [c.image for c in read(name, ns).spec.template.spec.containers]
                    assert any(i.endswith(":e2e-bumped") for i in images), images
        print(f"examples: rolled out after {time.monotonic() - started:.0f}s")
    finally:
        delete_namespaces(kube, compiled, [*namespaces, "pincompute-sidecars",
                                           "pincompute-buffer"])
