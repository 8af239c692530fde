"""Facts about one workload that filters, scores and quota share: its pod, its project,
how many of its pods must fit one cluster at once, and capacity arithmetic."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal

from pincompile.catalog import Catalog, Entry
from pincompile.injection import GPU, Requests, pod_requests
from pincompile.models import (
    Cluster,
    PinApp,
    PinterestJobSet,
    PinterestService,
    PinterestTrainingJob,
    Project,
    Workload,
)
from pincompile.models.types import format_quantity, parse_quantity

#: Kinds whose replicas are divided across clusters.
SERVICE_KINDS = (PinApp.KIND, PinterestService.KIND)
#: Resources a missing capacity entry means "none of it" for (others: not tracked).
ZERO_IF_MISSING = (GPU,)


@dataclass
class Context:
    """What filters and scores know about the workload being placed."""

    catalog: Catalog
    project: Entry[Project]
    requests: Requests
    """Effective requests of one pod (injected sidecars and init containers included)."""
    pods_together: int
    """Pods that must fit one cluster at once (all replicas of a training job, the
    parallelism of an undivided JobSet, else 1)."""
    capacities: dict[str, dict[str, Decimal]]
    """Cluster name → parsed capacity."""

    @property
    def together_requests(self) -> Requests:
        return {k: v * self.pods_together for k, v in self.requests.items()}


def workload_requests(entry: Entry[Workload], catalog: Catalog) -> Requests:
    """One pod's effective requests."""
    w = entry.resource
    return pod_requests(w.kind, w.pod_template, catalog)


def pods_together(workload: Workload) -> int:
    """Pods of ``workload`` that must run in one cluster at the same time."""
    if isinstance(workload, PinterestTrainingJob):
        return sum(workload.spec.replicas.values())
    if isinstance(workload, PinterestJobSet) and not workload.spec.placement.divide:
        return jobset_parallel(workload)
    return 1


def jobset_parallel(job: PinterestJobSet) -> int:
    """Pods of a JobSet that run at once: parallelism (default: all), at most completions."""
    par = job.spec.parallelism or job.spec.completions
    return min(par, job.spec.completions)


def cluster_capacity(cluster: Cluster) -> dict[str, Decimal]:
    return {k: parse_quantity(v) for k, v in sorted(cluster.spec.capacity.items())}


def pool_capacity(cluster: Cluster, tier: str) -> dict[str, Decimal]:
    """The capacity a workload of ``tier`` may use in ``cluster``: reserved workloads the
    reserved pool (``reservedCapacity``, for the resources it lists); ondemand workloads
    the rest of the capacity; preemptible workloads the whole capacity (they run in what is
    spare at the time, and are preempted first). Without ``reservedCapacity`` reserved and
    ondemand share the whole capacity."""
    whole_capacity = cluster_capacity(cluster)
    reserved: dict[str, Decimal] = {
        k: parse_quantity(v) for k, v in cluster.spec.reserved_capacity.items()}
    if tier == "reserved":
        return {**whole_capacity, **reserved}
    if tier == "ondemand":
        return {k: max(v - reserved.get(k, Decimal(0)), Decimal(0))
                for k, v in whole_capacity.items()}
    return whole_capacity


def rollout_surge(max_surge: int | str, desired: int) -> int:
    """Extra pods a Deployment of ``desired`` replicas runs during a rollout: ``maxSurge``
    (a percentage is rounded up, as the Deployment controller does), at most ``desired``."""
    if isinstance(max_surge, str):
        percent = int(max_surge.rstrip("%"))
        return min(-(-desired * percent // 100), desired)
    return min(max_surge, desired)


def available(capacity: dict[str, Decimal], resource: str) -> Decimal | None:
    """How much of ``resource`` a cluster offers: its capacity, 0 for an unlisted GPU, or
    None when the resource is not tracked."""
    if resource in capacity:
        return capacity[resource]
    return Decimal(0) if resource in ZERO_IF_MISSING else None


def pods_fit(capacity: dict[str, Decimal], requests: Requests) -> Decimal | None:
    """How many pods with ``requests`` the capacity holds (a Decimal, not rounded), or None
    when nothing in the capacity constrains them. A missing ``nvidia.com/gpu`` capacity
    means no GPUs; other missing entries are not tracked."""
    best: Decimal | None = None
    for res, amount in requests.items():
        have = available(capacity, res)
        if amount <= 0 or have is None:
            continue
        n = have / amount
        best = n if best is None else min(best, n)
    if "pods" in capacity:
        best = capacity["pods"] if best is None else min(best, capacity["pods"])
    return best


def whole(value: Decimal) -> int:
    return int(value.to_integral_value(rounding=ROUND_FLOOR))


def shortfall(capacity: dict[str, Decimal], requests: Requests, pods: int) -> str | None:
    """Why ``pods`` pods with ``requests`` do not fit ``capacity`` (None if they do)."""
    for res, amount in sorted(requests.items()):
        need = amount * pods
        have = available(capacity, res)
        if need <= 0 or have is None:
            continue
        if need > have:
            what = f"{pods} pods need" if pods != 1 else "one pod needs"
            if have == 0:
                return f"{what} {res} {format_quantity(need, res)}; the cluster has none"
            return (f"{what} {res} {format_quantity(need, res)}; the cluster's capacity "
                    f"is {format_quantity(have, res)}")
    if "pods" in capacity and pods > capacity["pods"]:
        return f"{pods} pods exceed the cluster's capacity of {capacity['pods']} pods"
    return None
