"""PinterestTrainingJobs on the fleet's Kubeflow training operator: `pincompile apply`
creates a TFJob and PyTorchJobs on a member cluster that lists the kubeflow-training
addon, the real operator creates their pods and Services, kwok runs the pods, and the
jobs end Succeeded — or Failed with the operator's reason when their pods keep failing
(restartPolicy OnFailure: the containers restart, which counts against backoffLimit).
`pincompile status` then reports what the jobs' conditions say.

The module has a fleet of its own (one member cluster and the host): it applies a spec
tree of its own, with pruning, which must not touch the session fleet's apps.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pincompile.cli import cli
from reconciler.fleet import fleet as fleet_mod
from reconciler.health import health_of
from tests.conftest import api_clients, fleet_of_its_own
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e

CLUSTER = "train-e2e-1"
PROJECT = "train-e2e"
Kube = Callable[[str], Any]

PLATFORM = f"""\
apiVersion: pincompute.io/v1
kind: Cluster
metadata: {{name: {CLUSTER}}}
spec:
  region: us-east-1
  zone: us-east-1a
  capacity: {{cpu: "64", memory: 256Gi}}
  tiers: [reserved]
  addons: [kubeflow-training]
"""


def job(name: str, framework: str, replicas: str, *, fail: bool = False) -> str:
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
  placement: {{clusters: [{CLUSTER}]}}
  template:
    containers:
      - name: {container}
        image: registry.internal/e2e/train:1.0
        resources: {{cpu: 500m, memory: 1Gi}}
  runPolicy: {{backoffLimit: 1, cleanPodPolicy: None}}
"""


SPECS = f"""\
apiVersion: pincompute.io/v1
kind: Project
metadata: {{name: {PROJECT}}}
spec:
  owners: [e2e]
  quota:
    reserved: {{cpu: "16", memory: 32Gi}}
""" + job("tf-ok", "tensorflow", "{chief: 1, worker: 2, ps: 1}") + job(
    "pt-ok", "pytorch", "{master: 1, worker: 2}") + job(
    "pt-fail", "pytorch", "{master: 1, worker: 1}", fail=True)


@pytest.fixture(scope="module")
def training_fleet(e2e_toolchain: Path, tmp_path_factory: pytest.TempPathFactory
                   ) -> Iterator[tuple[fleet_mod.FleetState, Path]]:
    root = tmp_path_factory.mktemp("training") / "specs"
    (root / "platform").mkdir(parents=True)
    (root / "platform" / "clusters.yaml").write_text(PLATFORM)
    with fleet_of_its_own(root / "platform", "training") as state:
        (root / "platform" / "train.yaml").write_text(SPECS)
        yield state, root


@pytest.fixture(scope="module")
def kube(training_fleet: tuple[fleet_mod.FleetState, Path]) -> Iterator[Kube]:
    with api_clients(training_fleet[0].kubeconfig) as get:
        yield get


def conditions(kube: Kube, plural: str, name: str) -> dict[str, dict[str, Any]]:
    """The training job's conditions by type (as the operator wrote them)."""
    from kubernetes import client

    obj = client.CustomObjectsApi(kube(CLUSTER)).get_namespaced_custom_object_status(
        "kubeflow.org", "v1", PROJECT, plural, name)
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


def finished(kube: Kube, plural: str, name: str) -> dict[str, dict[str, Any]] | None:
    found = conditions(kube, plural, name)
    done = [t for t in ("Succeeded", "Failed") if found.get(t, {}).get("status") == "True"]
    return found if done else None


def status_rows(fleet: fleet_mod.FleetState) -> dict[str, dict[str, Any]]:
    result = CliRunner().invoke(cli, ["status", "-o", "json",
                                      "--kubeconfig", str(fleet.kubeconfig)])
    assert result.exit_code == 0, result.output
    return {r["name"]: r["status"] for r in json.loads(result.output)
            if r["kind"] == "PinterestTrainingJob"}


def apply(fleet: fleet_mod.FleetState, root: Path) -> str:
    result = CliRunner().invoke(cli, ["apply", str(root), "--no-wait",
                                      "--kubeconfig", str(fleet.kubeconfig)])
    assert result.exit_code in (0, 1), result.output
    return result.output


def test_training_jobs_run_to_succeeded_or_fail_with_the_operators_reason(
        training_fleet: tuple[fleet_mod.FleetState, Path], kube: Kube) -> None:
    from kubernetes import client

    fleet, root = training_fleet
    apply(fleet, root)
    tf = wait_for(lambda: finished(kube, "tfjobs", "tf-ok"), 120, "TFJob tf-ok to finish",
                  describe=lambda: str(conditions(kube, "tfjobs", "tf-ok")))
    pt = wait_for(lambda: finished(kube, "pytorchjobs", "pt-ok"), 120,
                  "PyTorchJob pt-ok to finish",
                  describe=lambda: str(conditions(kube, "pytorchjobs", "pt-ok")))
    assert tf["Succeeded"]["status"] == "True" and "Failed" not in tf, tf
    assert pt["Succeeded"]["status"] == "True" and "Failed" not in pt, pt
    # the operator made the pods (one per replica) and kwok ran them to completion
    core: Any = client.CoreV1Api(kube(CLUSTER))
    pods = core.list_namespaced_pod(PROJECT, label_selector="training.kubeflow.org/job-name"
                                    ).items
    by_job: dict[str, list[str]] = {}
    for pod in pods:
        by_job.setdefault(pod.metadata.labels["training.kubeflow.org/job-name"], []).append(
            pod.status.phase)
    assert sorted(by_job["tf-ok"]) == ["Succeeded"] * 4, by_job
    assert sorted(by_job["pt-ok"]) == ["Succeeded"] * 3, by_job

    # pods exiting 3 restart (OnFailure) until the backoff limit fails the job
    failed = wait_for(lambda: finished(kube, "pytorchjobs", "pt-fail"), 120,
                      "PyTorchJob pt-fail to finish",
                      describe=lambda: str(conditions(kube, "pytorchjobs", "pt-fail")))
    assert failed["Failed"]["status"] == "True", failed
    assert "backoff limit" in failed["Failed"]["message"], failed

    # a pass reads the jobs' health; `pincompile status` shows it
    apply(fleet, root)
    rows = status_rows(fleet)
    live = {name: client.CustomObjectsApi(kube(CLUSTER)).get_namespaced_custom_object(
        "kubeflow.org", "v1", PROJECT, plural, name)
        for name, plural in (("tf-ok", "tfjobs"), ("pt-ok", "pytorchjobs"),
                             ("pt-fail", "pytorchjobs"))}
    for name in ("tf-ok", "pt-ok"):
        phase = health_of(live[name]).phase
        assert rows[name]["phase"] == phase == "Completed", rows[name]
    assert rows["pt-fail"]["phase"] == "Failed", rows["pt-fail"]
    assert "backoff limit" in rows["pt-fail"].get("message", ""), rows["pt-fail"]
