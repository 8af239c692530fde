"""PinterestTrainingJobs on the fleet's Kubeflow training operator: `pincompile apply`
creates a TFJob and PyTorchJobs on a member cluster that lists the kubeflow-training
addon, the real operator creates their pods and Services, kwok runs the pods, and the
jobs end Succeeded — or Failed with the operator's reason when their pods keep failing
(restartPolicy OnFailure: the containers restart, which counts against backoffLimit).
`pincompile status` then reports what the jobs' conditions say.

On the session fleet's cluster with the addon: a project of its own, applied with
``apply -p`` (nothing of another project is written or pruned) and deleted afterwards.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pincompile.cli import cli
from reconciler.fleet import fleet as fleet_mod
from reconciler.fleet.clusters import ClusterSpec
from reconciler.health import health_of
from tests.e2e.support import write_clusters
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e

PROJECT = "train-e2e"
Kube = Callable[[str], Any]


def job(name: str, framework: str, replicas: str, cluster: str, *,
        fail: bool = False) -> str:
    container = "pytorch" if framework == "pytorch" else "tensorflow"
    annotations = ('  annotations: {"kwok.pincompute.io/exit-code": "3"}\n' if fail else "")
    return f"""\
---
apiVersion: pincompute.io/v1
kind: PinterestTrainingJob
metadata:
  name: {name}
  project: {PROJECT}
{annotations}spec:
  framework: {framework}
  replicas: {replicas}
  tier: reserved
  placement: {{clusters: [{cluster}]}}
  template:
    containers:
      - name: {container}
        image: registry.internal/e2e/train:1.0
        resources: {{cpu: 500m, memory: 1Gi}}
  runPolicy: {{backoffLimit: 1, cleanPodPolicy: None}}
"""


def specs(cluster: str) -> str:
    """The project and its three training jobs, placed in ``cluster``."""
    return f"""\
apiVersion: pincompute.io/v1
kind: Project
metadata: {{name: {PROJECT}}}
spec:
  owners: [e2e]
  quota:
    reserved: {{cpu: "16", memory: 32Gi}}
""" + job("tf-ok", "tensorflow", "{chief: 1, worker: 2, ps: 1}", cluster) + job(
        "pt-ok", "pytorch", "{master: 1, worker: 2}", cluster) + job(
        "pt-fail", "pytorch", "{master: 1, worker: 1}", cluster, fail=True)


@pytest.fixture(scope="module")
def training_fleet(fleet: fleet_mod.FleetState, fleet_specs: dict[str, ClusterSpec],
                   kube: Kube, tmp_path_factory: pytest.TempPathFactory
                   ) -> Iterator[tuple[fleet_mod.FleetState, Path, Any]]:
    """The session fleet, a spec tree of its Cluster specs and this module's project,
    placed in the fleet's cluster with the training operator, and a client of that
    cluster (the project's namespaces are deleted afterwards)."""
    from kubernetes import client

    cluster = next((s for s in fleet_specs.values() if "kubeflow-training" in s.addons),
                   None)
    if cluster is None:
        pytest.skip("no cluster of the session fleet lists the kubeflow-training addon")
    root = tmp_path_factory.mktemp("training") / "specs"
    write_clusters(fleet.clusters_path, root)
    (root / "platform" / "train.yaml").write_text(specs(cluster.name))
    try:
        yield fleet, root, kube(cluster.context)
    finally:
        for context in (cluster.context, fleet_mod.HOST):
            with contextlib.suppress(client.ApiException):  # never made: nothing to delete
                client.CoreV1Api(kube(context)).delete_namespace(PROJECT)


def conditions(member: Any, plural: str, name: str) -> dict[str, dict[str, Any]]:
    """The training job's conditions by type (as the operator wrote them)."""
    from kubernetes import client

    obj = client.CustomObjectsApi(member).get_namespaced_custom_object_status(
        "kubeflow.org", "v1", PROJECT, plural, name)
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


def finished(member: Any, plural: str, name: str) -> dict[str, dict[str, Any]] | None:
    found = conditions(member, plural, name)
    done = [t for t in ("Succeeded", "Failed") if found.get(t, {}).get("status") == "True"]
    return found if done else None


def status_rows(fleet: fleet_mod.FleetState) -> dict[str, dict[str, Any]]:
    result = CliRunner().invoke(cli, ["status", "-p", PROJECT, "-o", "json",
                                      "--kubeconfig", str(fleet.kubeconfig)])
    assert result.exit_code == 0, result.output
    return {r["name"]: r for r in json.loads(result.output)["items"]
            if r["kind"] == "PinterestTrainingJob"}


def apply(fleet: fleet_mod.FleetState, root: Path) -> str:
    result = CliRunner().invoke(cli, ["apply", str(root), "-p", PROJECT, "--no-wait",
                                      "--kubeconfig", str(fleet.kubeconfig)])
    assert result.exit_code in (0, 1), result.output
    return result.output


def test_training_jobs_run_to_succeeded_or_fail_with_the_operators_reason(
        training_fleet: tuple[fleet_mod.FleetState, Path, Any]) -> None:
    from kubernetes import client

    fleet, root, member = training_fleet
    apply(fleet, root)
    tf = wait_for(lambda: finished(member, "tfjobs", "tf-ok"), 120, "TFJob tf-ok to finish",
                  describe=lambda: str(conditions(member, "tfjobs", "tf-ok")))
    pt = wait_for(lambda: finished(member, "pytorchjobs", "pt-ok"), 120,
                  "PyTorchJob pt-ok to finish",
                  describe=lambda: str(conditions(member, "pytorchjobs", "pt-ok")))
    assert tf["Succeeded"]["status"] == "True" and "Failed" not in tf, tf
    assert pt["Succeeded"]["status"] == "True" and "Failed" not in pt, pt
    # the operator made the pods (one per replica) and kwok ran them to completion
    core: Any = client.CoreV1Api(member)
    pods = core.list_namespaced_pod(PROJECT, label_selector="training.kubeflow.org/job-name"
                                    ).items
    by_job: dict[str, list[str]] = {}
    for pod in pods:
        by_job.setdefault(pod.metadata.labels["training.kubeflow.org/job-name"], []).append(
            pod.status.phase)
    assert sorted(by_job["tf-ok"]) == ["Succeeded"] * 4, by_job
    assert sorted(by_job["pt-ok"]) == ["Succeeded"] * 3, by_job

    # pods exiting 3 restart (OnFailure) until the backoff limit fails the job
    failed = wait_for(lambda: finished(member, "pytorchjobs", "pt-fail"), 120,
                      "PyTorchJob pt-fail to finish",
                      describe=lambda: str(conditions(member, "pytorchjobs", "pt-fail")))
    assert failed["Failed"]["status"] == "True", failed
    assert "backoff limit" in failed["Failed"]["message"], failed

    # a pass reads the jobs' health; `pincompile status` shows it
    apply(fleet, root)
    rows = status_rows(fleet)
    live = {name: client.CustomObjectsApi(member).get_namespaced_custom_object(
        "kubeflow.org", "v1", PROJECT, plural, name)
        for name, plural in (("tf-ok", "tfjobs"), ("pt-ok", "pytorchjobs"),
                             ("pt-fail", "pytorchjobs"))}
    for name in ("tf-ok", "pt-ok"):
        phase = health_of(live[name]).phase
        assert rows[name]["phase"] == phase == "Completed", rows[name]
    assert rows["pt-fail"]["phase"] == "Failed", rows["pt-fail"]
    assert "backoff limit" in rows["pt-fail"].get("message", ""), rows["pt-fail"]
