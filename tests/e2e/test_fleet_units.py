"""Unit tests of the fleet helpers that need no cluster: specs, nodes, ports, args."""

from __future__ import annotations

import json
import random
import socket
from decimal import Decimal
from pathlib import Path

import pytest

from reconciler.fleet import addons, build, ports, storage
from reconciler.fleet.clusters import ClusterSpec, ClusterSpecError, load_clusters
from reconciler.fleet.fleet import STAGES
from reconciler.fleet.nodes import (
    GPU,
    GPU_TYPE_LABEL,
    KWOK_ANNOTATION,
    generate_nodes,
    host_cluster,
    parse_quantity,
    split,
)

FIXTURES = Path(__file__).parent / "fixtures" / "clusters"


def _sum(nodes: list[dict], resource: str) -> Decimal:
    return sum((parse_quantity(n["status"]["allocatable"].get(resource, "0")) for n in nodes),
               Decimal(0))


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
    doc = "apiVersion: pincompute.io/v1\nkind: Cluster\nmetadata: {name: a}\nspec: {}\n"
    (tmp_path / "a.yaml").write_text(doc + "---\n" + doc)
    with pytest.raises(ClusterSpecError, match="already defined"):
        load_clusters(tmp_path)


def test_load_clusters_ignores_other_kinds(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(
        "apiVersion: pincompute.io/v1\nkind: Project\nmetadata: {name: p}\nspec: {}\n")
    assert load_clusters(tmp_path) == []


@pytest.mark.parametrize(("text", "value"), [
    ("500m", Decimal("0.5")), ("2", Decimal(2)), ("4Gi", Decimal(4 * 2**30)),
    ("16Ti", Decimal(16 * 2**40)), ("1k", Decimal(1000)), ("1.5", Decimal("1.5")),
])
def test_parse_quantity(text: str, value: Decimal) -> None:
    assert parse_quantity(text) == value


def test_split_sums_exactly() -> None:
    for total in (0, 1, 7, 1000, 12345):
        for parts in (1, 2, 3, 5):
            chunks = split(total, parts)
            assert sum(chunks) == total and max(chunks) - min(chunks) <= 1


@pytest.mark.parametrize("path", [FIXTURES, Path(__file__).parents[2] / "examples/platform"])
def test_nodes_add_up_to_cluster_capacity(path: Path) -> None:
    if not path.exists():
        pytest.skip(f"{path} not present")
    for spec in load_clusters(path):
        nodes = generate_nodes(spec)
        for resource, value in spec.capacity.items():
            assert _sum(nodes, resource) == parse_quantity(value), (spec.name, resource)
        for node in nodes:
            labels = node["metadata"]["labels"]
            assert labels["topology.kubernetes.io/zone"] == spec.zone
            assert labels["topology.kubernetes.io/region"] == spec.region
            assert labels["kubernetes.io/arch"] in spec.arch
            assert node["metadata"]["annotations"][KWOK_ANNOTATION] == "fake"
            for key, value in spec.labels.items():
                assert labels[key] == value


def test_gpu_nodes_are_separate_tainted_and_labelled() -> None:
    spec = {s.name: s for s in load_clusters(FIXTURES)}["test-east-gpu"]
    nodes = generate_nodes(spec)
    gpu_nodes = [n for n in nodes if GPU in n["status"]["allocatable"]]
    general = [n for n in nodes if GPU not in n["status"]["allocatable"]]
    assert len(general) == 3 and len(gpu_nodes) == 2
    assert _sum(gpu_nodes, GPU) == 8
    for node in gpu_nodes:
        assert node["metadata"]["labels"][GPU_TYPE_LABEL] == "A10G"
        assert node["spec"]["taints"][0]["key"] == GPU
    for node in general:
        assert GPU_TYPE_LABEL not in node["metadata"]["labels"]
        assert "taints" not in node["spec"]


def test_several_gpu_types_and_arches() -> None:
    spec = ClusterSpec(name="mix", context="mix", zone="z", region="r",
                       capacity={"cpu": "10", "memory": "10Gi", GPU: "5"},
                       gpu_types=("A100", "H100"), arch=("amd64", "arm64"))
    nodes = generate_nodes(spec)
    by_type: dict[str, Decimal] = {}
    for node in nodes:
        gpu_type = node["metadata"]["labels"].get(GPU_TYPE_LABEL)
        if gpu_type:
            by_type[gpu_type] = by_type.get(gpu_type, Decimal(0)) + parse_quantity(
                node["status"]["allocatable"][GPU])
    assert by_type == {"A100": 3, "H100": 2}
    assert _sum(nodes, "cpu") == 10
    arches = {n["metadata"]["labels"]["kubernetes.io/arch"] for n in nodes}
    assert arches == {"amd64", "arm64"}
    assert len({n["metadata"]["name"] for n in nodes}) == len(nodes)


def test_cordoned_cluster_nodes_are_unschedulable() -> None:
    spec = ClusterSpec(name="c", context="c", capacity={"cpu": "4"}, schedulable=False)
    assert all(n["spec"]["unschedulable"] for n in generate_nodes(spec))


def test_host_cluster_is_small() -> None:
    nodes = generate_nodes(host_cluster(), general_nodes=1)
    assert len(nodes) == 1 and nodes[0]["metadata"]["name"] == "host-general-0"


def test_addon_crds() -> None:
    names = {c["metadata"]["name"] for c in addons.crds_for(["kubeflow-training", "nope"])}
    assert {"tfjobs.kubeflow.org", "pytorchjobs.kubeflow.org"} <= names


def test_choose_ports_are_distinct_free_and_not_excluded() -> None:
    excluded = set(range(20000, 26000))
    chosen = ports.choose_ports(20, exclude=excluded, rng=random.Random(1))
    assert len(set(chosen)) == 20
    low, high = ports.PORT_RANGE
    eph = ports._ephemeral_range()
    for port in chosen:
        assert low <= port <= high and port not in excluded
        assert not eph[0] <= port <= eph[1]
        assert ports.port_is_free(port)


def test_choose_ports_skips_ports_in_use() -> None:
    busy = ports.choose_ports(1, port_range=(21000, 21900))[0]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", busy))
        sock.listen()
        assert not ports.port_is_free(busy)
        chosen = ports.choose_ports(3, port_range=(busy, busy + 3))
        assert busy not in chosen


def test_claimed_ports_never_shared_between_fleets(tmp_path: Path) -> None:
    registry = tmp_path / "ports.json"
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        d.mkdir()
        (d / "state.json").write_text("{}")
    first = ports.claim_ports(registry, str(a), 40)
    second = ports.claim_ports(registry, str(b), 40)
    assert not set(first) & set(second)
    # a fleet whose state is gone loses its claim; releasing forgets it too
    (a / "state.json").unlink()
    ports.claim_ports(registry, str(b), 40)
    assert set(json.loads(registry.read_text())) == {str(b)}
    ports.release_ports(registry, str(b))
    assert json.loads(registry.read_text()) == {}


def test_version_hash_is_stable_and_tracks_go_mod(tmp_path: Path) -> None:
    mod = build.module_dir()
    assert build.version_hash(mod) == build.version_hash(mod)
    copy = tmp_path / "mod"
    copy.mkdir()
    (copy / "go.mod").write_text((mod / "go.mod").read_text().replace("v1.", "v9.", 1))
    (copy / "go.sum").write_text((mod / "go.sum").read_text())
    assert build.version_hash(copy) != build.version_hash(mod)
    assert build.versions(mod)["kubernetes"].startswith("v1.")
    assert "fleet-bin" in str(build.bin_dir(mod))


def test_stages_provision_volumes_for_every_fleet_storage_class() -> None:
    from ruamel.yaml import YAML

    stages = {d["metadata"]["name"]: d for d in YAML(typ="safe").load_all(STAGES.read_text())}
    assert {"node-initialize", "pod-ready", "pod-complete", "pod-fail", "pvc-provision"} <= set(
        stages)
    expr = stages["pvc-provision"]["spec"]["selector"]["matchExpressions"][0]["cel"]["expression"]
    for name in storage.STORAGE_CLASSES:
        assert f"'{name}'" in expr
    defaults = [c for c in storage.storage_classes() if c["metadata"]["annotations"][
        "storageclass.kubernetes.io/is-default-class"] == "true"]
    assert len(defaults) == 1
