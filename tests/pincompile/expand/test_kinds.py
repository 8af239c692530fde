"""Each kind's expansion beyond what the goldens show, and expand_all's contract."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pincompile.expand import expand_all
from pincompile.expand.context import child_name
from tests.support.expand import GOLDEN, PLATFORM, expand, load, load_apps, make_plan, objects, one

APP = """\
apiVersion: pincompute.io/v1
kind: PinApp
metadata: {name: web, project: search}
spec:
  replicas: 4
  template:
    containers: [{name: main, image: registry.internal/web:1.0.0}]
"""
SCALER = """\
---
apiVersion: pincompute.io/v1
kind: PinScaler
metadata: {name: web, project: search}
spec: {target: web, minReplicas: 2, maxReplicas: 8, cooldown: {scaleDown: 2h}}
"""
JOBSET = """\
apiVersion: pincompute.io/v1
kind: PinterestJobSet
metadata: {name: batch, project: search}
spec:
  completions: 10
  parallelism: 4
  template:
    containers: [{name: main, image: registry.internal/batch:1.0.0}]
    config: {job.conf: static}
  configTemplates: {job.conf: "{{ job.completions }}"}
"""


def catalog_of(tmp_path: Path, **files: str) -> Any:
    return load_apps(tmp_path / "repo", {f"apps/search/{k}.yaml": v for k, v in files.items()})


def test_app_replicas_follow_plan_and_scaler(tmp_path: Path) -> None:
    catalog = catalog_of(tmp_path, web=APP + SCALER)
    manifests, problems = expand(catalog, {"PinApp/search/web": [
        {"cluster": "east-133", "replicas": 3, "minReplicas": 2, "maxReplicas": 5},
        {"cluster": "west-128", "replicas": 1, "minReplicas": 1, "maxReplicas": 3}]})
    assert "replicas" not in one(manifests, "Deployment", "east-133")["spec"]
    hpa = one(manifests, "HorizontalPodAutoscaler", "west-128")
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 3)
    assert hpa["metadata"]["labels"]["pincompute.io/kind"] == "PinScaler"
    assert [(d.line, d.code) for d in problems] == [(12, "cooldown-too-long")]
    assert hpa["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 3600

    manifests, _ = expand(catalog, {"PinApp/search/web": [{"cluster": "east-133",
                                                           "replicas": 4}]})
    assert one(manifests, "Deployment")["spec"]["replicas"] == 4


def test_stopped_app_scales_to_zero_without_hpa(tmp_path: Path) -> None:
    catalog = catalog_of(tmp_path, web=APP.replace("replicas: 4", "replicas: 4\n  stopped: true")
                         + SCALER.replace(", cooldown: {scaleDown: 2h}", ""))
    manifests, problems = expand(catalog, {"PinApp/search/web": [
        {"cluster": "east-133", "replicas": 4, "minReplicas": 2, "maxReplicas": 8}]})
    assert not problems
    assert one(manifests, "Deployment")["spec"]["replicas"] == 0
    assert not objects(manifests, "HorizontalPodAutoscaler")


def test_jobset_in_one_cluster(tmp_path: Path) -> None:
    catalog = catalog_of(tmp_path, batch=JOBSET.replace("    config: {job.conf: static}\n", ""))
    manifests, problems = expand(catalog, {"PinterestJobSet/search/batch": [
        {"cluster": "east-133", "replicas": 10}]})
    assert not problems
    job = one(manifests, "Job")
    assert job["metadata"]["name"] == "batch"
    assert job["spec"]["parallelism"] == 4 and job["spec"]["backoffLimitPerIndex"] == 3
    env = {e["name"]: e for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["PINCOMPUTE_SHARD_OFFSET"]["value"] == "0"
    assert env["PINCOMPUTE_SHARD_COUNT"]["value"] == "10"
    assert env["PINCOMPUTE_SHARD_INDEX"]["valueFrom"]["fieldRef"]["fieldPath"] == (
        "metadata.annotations['batch.kubernetes.io/job-completion-index']")
    assert one(manifests, "ConfigMap")["data"] == {"job.conf": "10"}


def test_jobset_config_name_clash_is_located(tmp_path: Path) -> None:
    catalog = catalog_of(tmp_path, batch=JOBSET)
    _, problems = expand(catalog, {"PinterestJobSet/search/batch": [
        {"cluster": "east-133", "replicas": 10}]})
    assert [(d.line, d.code) for d in problems] == [(10, "duplicate-config")]


def test_unplaced_workloads_are_skipped(tmp_path: Path) -> None:
    catalog = catalog_of(tmp_path, web=APP, batch=JOBSET)
    manifests, problems = expand(catalog, {"PinApp/search/web": []})
    assert not problems
    assert {m.kind for m in manifests} == {"PriorityClass"}
    assert expand_all(catalog, None, revision="x") == ([], [])
    plan = make_plan(catalog, {"PinApp/search/web": [{"cluster": "east-133", "replicas": 1}]})
    plan.decisions[("PinApp", "search", "web")].shards[0] = plan.decisions[
        ("PinApp", "search", "web")].shards[0].__class__("gone", "r", "z", 1)
    manifests, problems = expand_all(catalog, plan, revision="x")
    assert not problems and not objects(manifests, "Deployment")


def test_two_specs_making_one_object_is_an_error(tmp_path: Path) -> None:
    pod = """\
apiVersion: pincompute.io/v1
kind: PinPod
metadata: {name: %s, project: search}
spec:
  containers: [{name: main, image: registry.internal/x:1.0.0}]
  volumes: [{name: %s, type: ebs, size: 1Gi, mountPath: /data}]
"""
    catalog = catalog_of(tmp_path, a=pod % ("a", "b-data"), b=pod % ("a-b", "data"))
    manifests, problems = expand(catalog, {
        "PinPod/search/a": [{"cluster": "east-133", "replicas": 1}],
        "PinPod/search/a-b": [{"cluster": "east-133", "replicas": 1}]})
    assert [(d.file, d.line, d.code) for d in problems] == [
        ("apps/search/b.yaml", 3, "duplicate-object")]
    assert "PersistentVolumeClaim 'a-b-data' in cluster east-133" in problems[0].message
    assert len(objects(manifests, "PersistentVolumeClaim")) == 1


def test_platform_objects(tmp_path: Path) -> None:
    catalog = catalog_of(tmp_path, web=APP)
    manifests, _ = expand(catalog, {
        "PinApp/search/web": [{"cluster": "east-133", "replicas": 4}],
        "quotas": {"search/east-133": {"preemptible": {
            "cpu": "1500m", "memory": "3Gi", "nvidia.com/gpu": "0", "pods": "10",
            "storage": "1Ti", "ephemeral-storage": "10Gi"}}},
        "sidecarDaemons": {"node-agent": ["west-128"]}})
    classes = {o["metadata"]["name"]: o for o in objects(manifests, "PriorityClass", "gpu-133")}
    assert [classes[f"pincompute-{t}"]["value"]
            for t in ("reserved", "ondemand", "preemptible")] == [100000, 10000, 100]
    assert classes["pincompute-preemptible"]["preemptionPolicy"] == "Never"
    quotas = {o["metadata"]["name"]: o["spec"] for o in objects(manifests, "ResourceQuota")}
    assert quotas == {
        "pincompute-preemptible": {
            "hard": {"requests.cpu": "1500m", "requests.memory": "3Gi",
                     "requests.nvidia.com/gpu": "0", "pods": "10"},
            "scopeSelector": {"matchExpressions": [{
                "scopeName": "PriorityClass", "operator": "In",
                "values": ["pincompute-preemptible"]}]}},
        "pincompute-storage": {"hard": {"requests.storage": "1Ti",
                                        "requests.ephemeral-storage": "10Gi"}},
    }
    ns = one(manifests, "Namespace", "east-133")
    assert ns["metadata"]["annotations"]["pincompute.io/owners"] == "team-search,search-oncall"
    agent = one(manifests, "DaemonSet", "west-128")
    assert agent["metadata"]["namespace"] == "pincompute-sidecars"
    assert agent["spec"]["template"]["spec"]["hostNetwork"] is True
    assert agent["spec"]["template"]["spec"]["containers"][0]["args"] == [
        "--cluster=west-128", "--region=us-west-2"]


DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
OWNERSHIP = ("app.kubernetes.io/managed-by", "pincompute.io/project", "pincompute.io/app",
             "pincompute.io/kind", "pincompute.io/cluster")


def test_every_object_is_owned_and_named(tmp_path: Path) -> None:
    """Over every golden case: ownership labels, source and revision, DNS names."""
    import yaml

    for case in sorted(p for p in GOLDEN.iterdir() if (p / "plan.yaml").is_file()):
        spec = yaml.safe_load((case / "plan.yaml").read_text())
        spec.pop("scope", None)
        catalog, _ = load(PLATFORM, case / "input")
        manifests, _ = expand(catalog, spec)
        for m in manifests:
            meta = m.obj["metadata"]
            assert DNS_LABEL.match(meta["name"]), m.relpath
            assert all(k in meta["labels"] for k in OWNERSHIP), m.relpath
            assert meta["labels"]["pincompute.io/cluster"] == m.cluster
            tierless = m.kind in ("Namespace", "LimitRange", "NetworkPolicy", "RoleBinding") or (
                m.name in ("pincompute-storage", "pincompute-buffer", "buffer"))
            if not tierless:  # namespace-wide objects belong to no tier
                assert "pincompute.io/tier" in meta["labels"], m.relpath
            assert meta["annotations"]["pincompute.io/revision"] == "test"
            source = meta["annotations"]["pincompute.io/source"]
            # the file only: a comment that shifts lines must not rewrite every object
            assert re.fullmatch(r"(apps|platform)/[\w/.-]+\.yaml", source), source


def test_child_names_stay_dns_labels() -> None:
    assert child_name("search-api", "config") == "search-api-config"
    long = child_name("a" * 52, "very-long-volume-name")
    assert len(long) <= 63 and DNS_LABEL.match(long)
    assert long == child_name("a" * 52, "very-long-volume-name")
    assert long != child_name("a" * 52, "very-long-volume-nam2")
