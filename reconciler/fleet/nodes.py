"""Fake Node objects (managed by kwok) that add up to a Cluster spec's capacity.

Capacity is split over a few general nodes; GPUs go to separate, tainted GPU nodes (one
group per GPU type). CPU, memory and other resources are split evenly over all nodes, so
the nodes of a cluster always sum exactly to ``spec.capacity``.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from reconciler.fleet.clusters import ClusterSpec

GPU = "nvidia.com/gpu"
GPU_TYPE_LABEL = "pincompute.io/gpu-type"
CLUSTER_LABEL = "pincompute.io/cluster"
POOL_LABEL = "pincompute.io/node-pool"
TIER_LABEL_PREFIX = "pincompute.io/tier-"
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_SELECTOR = f"{KWOK_ANNOTATION}=fake"
#: where metrics-server reads a node's kubelet resource metrics (kwok serves them there)
METRICS_PATH_ANNOTATION = "metrics.k8s.io/resource-metrics-path"
GENERAL_NODES = 3
MAX_GPU_NODES_PER_TYPE = 2
DEFAULT_PODS_PER_NODE = 1000
DEFAULT_EPHEMERAL_STORAGE_PER_NODE = 10 * 2**40
DEFAULTS = {"cpu": "16", "memory": "64Gi"}

_SUFFIXES: dict[str, Decimal] = {
    "": Decimal(1), "m": Decimal("0.001"), "k": Decimal(10) ** 3, "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9, "T": Decimal(10) ** 12, "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18, "Ki": Decimal(2) ** 10, "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30, "Ti": Decimal(2) ** 40, "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?$")


def parse_quantity(value: str | int | float) -> Decimal:
    """Parse a Kubernetes quantity (``500m``, ``4Gi``, ``2``) into a Decimal."""
    match = _QUANTITY.match(str(value).strip())
    if not match:
        raise ValueError(f"not a Kubernetes quantity: {value!r}")
    return Decimal(match.group(1)) * _SUFFIXES[match.group(2) or ""]


def _format(resource: str, amount: int) -> str:
    """Format an integer amount (millicores for cpu, units otherwise) as a quantity."""
    if resource == "cpu":
        return str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        for suffix in ("Ti", "Gi", "Mi", "Ki"):
            unit = int(_SUFFIXES[suffix])
            if amount >= unit and amount % unit == 0:
                return f"{amount // unit}{suffix}"
    return str(amount)


def _to_int(resource: str, value: str) -> int:
    quantity = parse_quantity(value)
    return int(quantity * 1000) if resource == "cpu" else int(quantity)


def split(total: int, parts: int) -> list[int]:
    """Split ``total`` into ``parts`` integers that differ by at most one and sum to it."""
    if parts <= 0:
        return []
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def _slug(value: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", value.lower()).strip("-") or "x"


def node_layout(spec: ClusterSpec, general_nodes: int = GENERAL_NODES) -> list[tuple[str, str]]:
    """(node-name suffix, gpu type or "") for each node of the cluster, in order."""
    layout = [(f"general-{i}", "") for i in range(general_nodes)]
    gpus = _to_int(GPU, spec.capacity.get(GPU, "0"))
    if gpus > 0:
        types = list(spec.gpu_types) or ["generic"]
        for gpu_type, count in zip(types, split(gpus, len(types)), strict=True):
            nodes = min(MAX_GPU_NODES_PER_TYPE, count)
            layout += [(f"gpu-{_slug(gpu_type)}-{i}", gpu_type) for i in range(nodes)]
    return layout


#: every kwok node's address (kwok ``--node-ip``): the kubelet front listens on loopback
NODE_IP = "127.0.0.1"


def addresses(name: str) -> list[dict[str, str]]:
    """A kwok node's ``status.addresses``, as kwok's node-initialize stage writes them."""
    return [{"address": NODE_IP, "type": "InternalIP"}, {"address": name, "type": "Hostname"}]

def generate_nodes(
    spec: ClusterSpec, general_nodes: int = GENERAL_NODES
) -> list[dict[str, Any]]:
    """Node objects for ``spec``: labels, taints and allocatable from the Cluster spec."""
    layout = node_layout(spec, general_nodes)
    capacity = {**DEFAULTS, **spec.capacity}
    shares: list[dict[str, str]] = [{} for _ in layout]
    for resource, value in capacity.items():
        if resource == GPU:
            continue
        total = _to_int(resource, value)
        # Split memory-like totals in whole MiB so the values stay readable.
        granule = 2**20 if resource != "cpu" and total % 2**20 == 0 else 1
        for share, amount in zip(shares, split(total // granule, len(layout)), strict=True):
            share[resource] = _format(resource, amount * granule)
    for share in shares:
        share.setdefault("pods", str(DEFAULT_PODS_PER_NODE))
        share.setdefault("ephemeral-storage", _format("ephemeral-storage",
                                                      DEFAULT_EPHEMERAL_STORAGE_PER_NODE))
    gpus = _to_int(GPU, capacity.get(GPU, "0"))
    if gpus > 0:
        types = list(spec.gpu_types) or ["generic"]
        for gpu_type, count in zip(types, split(gpus, len(types)), strict=True):
            idx = [i for i, (_, t) in enumerate(layout) if t == gpu_type]
            for i, amount in zip(idx, split(count, len(idx)), strict=True):
                shares[i][GPU] = str(amount)
    kubelet = f"v{spec.kubernetes_version}.0-kwok" if spec.kubernetes_version else ""
    nodes = []
    for i, ((suffix, gpu_type), share) in enumerate(zip(layout, shares, strict=True)):
        name = f"{spec.name}-{suffix}"
        arch = spec.arch[i % len(spec.arch)] if not gpu_type else spec.arch[0]
        labels = dict(spec.labels)
        labels.update({f"{TIER_LABEL_PREFIX}{t}": "true" for t in spec.tiers})
        labels.update({
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": arch,
            "node.kubernetes.io/instance-type": f"kwok-{'gpu' if gpu_type else 'general'}",
            "type": "kwok",
            CLUSTER_LABEL: spec.name,
            POOL_LABEL: "gpu" if gpu_type else "general",
        })
        if spec.zone:
            labels["topology.kubernetes.io/zone"] = spec.zone
        if spec.region:
            labels["topology.kubernetes.io/region"] = spec.region
        node_spec: dict[str, Any] = {}
        if gpu_type:
            labels[GPU_TYPE_LABEL] = gpu_type
            labels["nvidia.com/gpu.present"] = "true"  # as NVIDIA GPU feature discovery does
            node_spec["taints"] = [{"key": GPU, "value": "present", "effect": "NoSchedule"}]
        if not spec.schedulable:
            node_spec["unschedulable"] = True
        # every NodeSystemInfo field is required; kwok fills in the empty ones
        node_info = {"architecture": arch, "operatingSystem": "linux", "bootID": "",
                     "containerRuntimeVersion": "", "kernelVersion": "", "kubeProxyVersion": "",
                     "kubeletVersion": kubelet, "machineID": "", "osImage": "",
                     "systemUUID": ""}
        nodes.append({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": labels,
                "annotations": {KWOK_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0",
                                METRICS_PATH_ANNOTATION:
                                    f"/metrics/nodes/{name}/metrics/resource"},
            },
            "spec": node_spec,
            # the addresses kwok's node-initialize stage would add, set from the start:
            # the API server reaches a node's kubelet (logs, exec, metrics) by its
            # InternalIP, and a node left without one answered "no preferred addresses"
            "status": {"allocatable": dict(share), "capacity": dict(share),
                       "nodeInfo": node_info,
                       "addresses": addresses(name)},
        })
    return nodes


def host_cluster() -> ClusterSpec:
    """The fleet's *host* control plane (where a reconciler may keep its own state)."""
    return ClusterSpec(name="host", context="host", region="local", zone="local",
                       capacity={"cpu": "16", "memory": "64Gi"}, arch=("amd64",))
