"""The fleet reads its Cluster specs as a compile does: the same errors, the same defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from pincompile.compiler import compile_path
from reconciler.fleet.clusters import ClusterSpecError, load_clusters
from reconciler.fleet.nodes import GPU, generate_nodes

FIXTURES = Path(__file__).parents[2] / "e2e" / "fixtures" / "clusters"


CLUSTER = """apiVersion: pincompute.io/v1
kind: Cluster
metadata: {name: solo}
spec:
"""
PROJECT = """apiVersion: pincompute.io/v1
kind: Project
metadata: {name: shop}
spec:
  quota:
    reserved: {cpu: "4", memory: 8Gi}
    ondemand: {cpu: "4", memory: 8Gi}
"""
APP = """apiVersion: pincompute.io/v1
kind: PinApp
metadata: {name: web, project: shop}
spec:
  replicas: 1
  tier: TIER
  template:
    containers:
      - name: main
        image: registry.internal/shop/web:1.0.0
        resources: {cpu: 100m, memory: 128Mi}
"""


def test_a_cluster_with_an_empty_spec_is_refused_where_the_compiler_refuses_it(
        tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(CLUSTER + "  {}\n")
    with pytest.raises(ClusterSpecError) as raised:
        load_clusters(tmp_path)
    message = str(raised.value)
    assert f"{tmp_path / 'c.yaml'}:5:3:" in message  # file:line:column of `{}`
    assert "region" in message and "zone" in message
    compiled = compile_path(tmp_path, expand=False)
    assert not compiled.ok
    assert {d.message for d in compiled.diagnostics} == {
        line.split(":5:3: ", 1)[1] for line in message.splitlines()}


def test_a_cluster_that_names_no_tiers_serves_every_tier_on_both_sides(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(CLUSTER + "  region: r\n  zone: z\n")
    (spec,) = load_clusters(tmp_path)
    assert spec.tiers == ("reserved", "ondemand", "preemptible")
    nodes = generate_nodes(spec)
    for tier in ("reserved", "ondemand"):
        (tmp_path / "p.yaml").write_text(PROJECT)
        (tmp_path / "app.yaml").write_text(APP.replace("TIER", tier))
        compiled = compile_path(tmp_path)
        assert compiled.ok, compiled.diagnostics
        (deployment,) = [m.obj for m in compiled.manifests if m.obj["kind"] == "Deployment"]
        affinity = deployment["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
        (term,) = affinity["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"]
        (wanted,) = term["matchExpressions"]
        assert wanted["operator"] == "In"
        # every node of the fleet's cluster carries the label the compiled pod requires
        assert all(n["metadata"]["labels"].get(wanted["key"]) in wanted["values"]
                   for n in nodes), (tier, wanted)


def test_named_tiers_label_only_their_nodes(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(CLUSTER + "  region: r\n  zone: z\n  tiers: [ondemand]\n")
    (spec,) = load_clusters(tmp_path)
    labels = generate_nodes(spec)[0]["metadata"]["labels"]
    assert {k for k in labels if k.startswith("pincompute.io/tier-")} == {
        "pincompute.io/tier-ondemand"}


def test_a_field_the_compiler_refuses_is_refused_with_its_location(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(CLUSTER + "  region: r\n  zone: z\n  tiers: [gold]\n")
    with pytest.raises(ClusterSpecError, match=r"c\.yaml:7:\d+: .*gold"):
        load_clusters(tmp_path)


def test_one_file_and_other_kinds(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(
        PROJECT + "---\n" + CLUSTER + "  region: r\n  zone: z\n  context: ctx\n")
    (spec,) = load_clusters(tmp_path / "c.yaml")
    assert (spec.name, spec.context, spec.kubernetes_version) == ("solo", "ctx", "1.33")
    assert spec.source == f"{tmp_path / 'c.yaml'}:9:1"


def test_a_missing_path_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ClusterSpecError, match="no such file or directory"):
        load_clusters(tmp_path / "nowhere")


def test_load_clusters_reads_fixture_specs() -> None:
    specs = {s.name: s for s in load_clusters(FIXTURES)}
    assert sorted(specs) == ["test-east-a", "test-east-gpu", "test-west-a"]
    gpu = specs["test-east-gpu"]
    assert gpu.context == "gpu-ctx"
    assert specs["test-east-a"].context == "test-east-a"  # default: metadata.name
    assert gpu.gpu_types == ("A10G",)
    assert gpu.capacity[GPU] == "8"
    assert specs["test-east-a"].arch == ("amd64", "arm64")
    assert specs["test-west-a"].gpu_types == ()


def test_load_clusters_rejects_duplicates(tmp_path: Path) -> None:
    doc = ("apiVersion: pincompute.io/v1\nkind: Cluster\nmetadata: {name: a}\n"
           "spec: {region: r, zone: z}\n")
    (tmp_path / "a.yaml").write_text(doc + "---\n" + doc)
    with pytest.raises(ClusterSpecError, match="already defined"):
        load_clusters(tmp_path)


def test_load_clusters_ignores_other_kinds(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(
        "apiVersion: pincompute.io/v1\nkind: Project\nmetadata: {name: p}\nspec: {}\n")
    assert load_clusters(tmp_path) == []
