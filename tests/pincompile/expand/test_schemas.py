"""Every object compiled from examples/ (and every golden) validates against the official
Kubernetes OpenAPI schema of its cluster's version (kubernetes-validate, strict: unknown
fields are errors); Kubeflow jobs against tests/pincompile/expand/schemas/."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pincompile.compiler import compile_path
from pincompile.diagnostics import render_human
from tests.support.expand import GOLDEN, PLATFORM, REPO, load, schema_version, validate

EXAMPLES = REPO / "examples"


@pytest.fixture(scope="module")
def examples() -> object:
    result = compile_path(EXAMPLES, revision="test")
    assert not result.diagnostics, render_human(result.diagnostics, result.sources)
    return result


def test_examples_compile(examples: object) -> None:
    kinds = {m.kind for m in examples.manifests}  # type: ignore[attr-defined]
    assert {"Deployment", "Job", "CronJob", "DaemonSet", "Pod", "PyTorchJob", "TFJob",
            "HorizontalPodAutoscaler", "PriorityClass", "ResourceQuota"} <= kinds


def test_examples_validate(examples: object) -> None:
    versions = {name: e.resource.spec.kubernetes_version
                for name, e in examples.catalog.clusters.items()}  # type: ignore[attr-defined]
    failures = [f"{m.relpath}: {error}"
                for m in examples.manifests  # type: ignore[attr-defined]
                for error in validate(m.obj, versions[m.cluster])]
    assert not failures, "\n".join(failures)


def test_goldens_validate() -> None:
    catalog, _ = load(PLATFORM)
    versions = {n: e.resource.spec.kubernetes_version for n, e in catalog.clusters.items()}
    files = sorted(GOLDEN.glob("*/expected/*/*/*.yaml"))
    assert files
    failures = [f"{path.relative_to(GOLDEN)}: {error}" for path in files
                for error in validate(yaml.safe_load(path.read_text()),
                                      versions[path.parent.parent.name])]
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize(("cluster", "schemas"), [
    ("1.28", "1.28.0"), ("1.33", "1.33.0"), ("1.9", "1.25.0"), ("1.20", "1.25.0"),
    ("1.99", "1.37.0"), ("2.1", "1.37.0"),
])
def test_schema_version_mapping(cluster: str, schemas: str) -> None:
    assert schema_version(cluster) == schemas


def test_validation_catches_mistakes() -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"},
                  "spec": {"selector": {}, "template": {"spec": {"containers": [
                      {"name": "a", "image": "i", "env": [{"name": "E"}, {"name": "E"}]}]}},
                      "replica": 1}}
    errors = validate(deployment, "1.33")
    assert any("replica" in e for e in errors) and any("duplicate 'E'" in e for e in errors)
    job = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "x"},
           "spec": {"pytorchReplicaSpecs": {
               "Launcher": {"replicas": 1, "template": {"spec": {"containers": [
                   {"name": "pytorch", "image": "i"}]}}},
               "Worker": {"replicas": 1, "template": {"spec": {"containers": [
                   {"name": "main", "image": "i"}]}}}},
               "runPolicy": {"cleanPodPolicy": "Sometimes"}}}
    errors = validate(job, "1.33")
    assert len(errors) >= 3, errors  # role name, container name, cleanPodPolicy


def test_kubeflow_schemas_are_valid_json_schema() -> None:
    import json

    import jsonschema

    for path in sorted(Path(REPO / "tests/pincompile/expand/schemas").glob("*.json")):
        jsonschema.Draft202012Validator.check_schema(json.loads(path.read_text()))
