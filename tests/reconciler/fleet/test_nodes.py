"""Fake Node objects add up to their Cluster spec: capacity, GPUs and their taints,
architectures, cordoned clusters, the host."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from reconciler.fleet.clusters import ClusterSpec, load_clusters
from reconciler.fleet.nodes import (
    GPU,
    GPU_TYPE_LABEL,
    KWOK_ANNOTATION,
    generate_nodes,
    host_cluster,
    parse_quantity,
    split,
)

FIXTURES = Path(__file__).parents[2] / "e2e" / "fixtures" / "clusters"


def _sum(nodes: list[dict], resource: str) -> Decimal:
    return sum((parse_quantity(n["status"]["allocatable"].get(resource, "0")) for n in nodes),
               Decimal(0))


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


@pytest.mark.parametrize("path", [FIXTURES, Path(__file__).parents[3] / "examples/platform"])
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
