"""Filter plugins: each removes clusters a workload may not run in, and says why.

A filter has a ``name`` and ``check(workload, cluster, ctx) -> reason | None``. The first
filter (in ``FILTERS`` order) that returns a reason removes the cluster; the decision records
``"<name>: <reason>"``. Filters look only at the workload, its project and the cluster, never
at other workloads, so one app's placement does not depend on another's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from pincompile.catalog import Entry
from pincompile.injection import GPU
from pincompile.models import Cluster, PinterestTrainingJob, Workload
from pincompile.models.base import DaemonPlacement, Placement
from pincompile.models.platform import POD_ENI_ADDON
from pincompile.placement.context import Context, cluster_capacity, shortfall

#: Operators a kind needs in the cluster.
REQUIRED_ADDONS: dict[str, tuple[str, ...]] = {
    PinterestTrainingJob.KIND: ("kubeflow-training",),
}


class Filter(Protocol):
    name: str

    def check(self, workload: Entry[Workload], cluster: Entry[Cluster], ctx: Context
              ) -> str | None: ...


def _listing(values: Sequence[str]) -> str:
    return ", ".join(values) if values else "none"


def _labels_reason(want: Mapping[str, str], have: Mapping[str, str]) -> str | None:
    for key, value in sorted(want.items()):
        if key not in have:
            return f"lacks label {key}={value}"
        if have[key] != value:
            return f"has label {key}={have[key]}, not {value}"
    return None


class Schedulable:
    """Cordoned clusters (``schedulable: false``) get nothing."""

    name = "schedulable"

    def check(self, workload: Entry[Workload], cluster: Entry[Cluster], ctx: Context
              ) -> str | None:
        if not cluster.resource.spec.schedulable:
            return "cluster is cordoned (schedulable: false)"
        return None


class ProjectPlacement:
    """The project's own ``spec.placement`` limits."""

    name = "project-placement"

    def check(self, workload: Entry[Workload], cluster: Entry[Cluster], ctx: Context
              ) -> str | None:
        limits = ctx.project.resource.spec.placement
        c = cluster.resource
        project = ctx.project.resource.name
        if limits.regions and c.spec.region not in limits.regions:
            return (f"project '{project}' may run only in regions {_listing(limits.regions)}; "
                    f"cluster is in {c.spec.region}")
        if limits.zones and c.spec.zone not in limits.zones:
            return (f"project '{project}' may run only in zones {_listing(limits.zones)}; "
                    f"cluster is in {c.spec.zone}")
        if limits.clusters and c.name not in limits.clusters:
            return f"project '{project}' may run only in clusters {_listing(limits.clusters)}"
        reason = _labels_reason(limits.cluster_labels, c.spec.labels)
        if reason:
            return f"project '{project}' requires cluster labels; cluster {reason}"
        return None


class Region:
    name = "region"

    def check(self, workload: Entry[Workload], cluster: Entry[Cluster], ctx: Context
              ) -> str | None:
        want = workload.resource.spec.placement.regions
        have = cluster.resource.spec.region
        if want and have not in want:
            return f"region {have} is not in placement.regions [{_listing(want)}]"
        return None


class Zone:
    name = "zone"

    def check(self, workload: Entry[Workload], cluster: Entry[Cluster], ctx: Context
              ) -> str | None:
        want = workload.resource.spec.placement.zones
        have = cluster.resource.spec.zone
        if want and have not in want:
            return f"zone {have} is not in placement.zones [{_listing(want)}]"
        return None


class ClusterName:
    """``placement.clusters`` (PinterestDaemon: ``all`` means no limit)."""

    name = "cluster"

    def check(self, workload: Entry[Workload], cluster: Entry[Cluster], ctx: Context
              ) -> str | None:
        want = workload.resource.spec.placement.clusters
        if want == "all" or not want:
            return None
        if cluster.resource.name not in want:
            return f"not in placement.clusters [{_listing(list(want))}]"
        return None


class ClusterLabels:
    name = "cluster-labels"

    def check(self, workload: Entry[Workload], cluster: Entry[Cluster], ctx: Context
              ) -> str | None:
        placement: Placement | DaemonPlacement = workload.resource.spec.placement
        reason = _labels_reason(placement.cluster_labels, cluster.resource.spec.labels)
        return f"cluster {reason} (placement.clusterLabels)" if reason else None


class TierOffered:
    name = "tier"

    def check(self, workload: Entry[Workload], cluster: Entry[Cluster], ctx: Context
              ) -> str | None:
        tier = workload.resource.spec.tier
        offered = cluster.resource.spec.tiers
        if tier not in offered:
            return f"tier {tier} is not offered (cluster offers {_listing(offered)})"
        return None


class Arch:
    name = "arch"

    def check(self, workload: Entry[Workload], cluster: Entry[Cluster], ctx: Context
              ) -> str | None:
        want = workload.resource.pod_template.arch
        have = cluster.resource.spec.arch
        if want and want not in have:
            return f"pod needs arch {want}; cluster has {_listing(have)}"
        return None


class GpuType:
    """``gpuType`` must be offered; a pod that requests GPUs needs a GPU cluster."""

    name = "gpu-type"

    def check(self, workload: Entry[Workload], cluster: Entry[Cluster], ctx: Context
              ) -> str | None:
        want = workload.resource.pod_template.gpu_type
        have = cluster.resource.spec.gpu_types
        if want and want not in have:
            return f"pod needs GPU type {want}; cluster offers {_listing(have)}"
        if not want and ctx.requests.get(GPU, 0) > 0 and not have:
            return "pod requests GPUs; cluster offers no GPU types"
        return None


def required_addons(workload: Workload) -> tuple[str, ...]:
    """Addons a workload needs: its kind's operator, the pod ENI addon for dedicated-eni."""
    need = REQUIRED_ADDONS.get(workload.kind, ())
    if workload.pod_template.network == "dedicated-eni":
        need = (*need, POD_ENI_ADDON)
    return need


class Addons:
    """Operators a kind needs (kubeflow-training for PinterestTrainingJob) and the pod ENI
    addon a ``network: dedicated-eni`` pod needs."""

    name = "addons"

    def check(self, workload: Entry[Workload], cluster: Entry[Cluster], ctx: Context
              ) -> str | None:
        need = required_addons(workload.resource)
        missing = [a for a in need if a not in cluster.resource.spec.addons]
        if missing:
            what = ("a dedicated-eni pod" if missing == [POD_ENI_ADDON]
                    else workload.resource.kind)
            return (f"{what} needs addon {', '.join(missing)}; cluster has "
                    f"{_listing(cluster.resource.spec.addons)}")
        return None


class CapacityFit:
    """The pods that must run together fit the cluster's capacity.

    Measured against the cluster's whole capacity, not what other workloads leave free:
    that keeps each workload's placement independent of every other workload's. The sum
    over all workloads is checked afterwards (``cluster-over-capacity``)."""

    name = "capacity"

    def check(self, workload: Entry[Workload], cluster: Entry[Cluster], ctx: Context
              ) -> str | None:
        capacity = ctx.capacities.get(cluster.resource.name)
        if capacity is None:
            capacity = cluster_capacity(cluster.resource)
        return shortfall(capacity, ctx.requests, ctx.pods_together)


#: Every filter, in the order they are applied.
FILTERS: tuple[Filter, ...] = (
    Schedulable(), ProjectPlacement(), Region(), Zone(), ClusterName(), ClusterLabels(),
    TierOffered(), Arch(), GpuType(), Addons(), CapacityFit(),
)


def run_filters(workload: Entry[Workload], clusters: Mapping[str, Entry[Cluster]],
                ctx: Context, filters: Sequence[Filter] = FILTERS
                ) -> tuple[list[str], dict[str, str]]:
    """(eligible cluster names sorted, {removed cluster: "<filter>: <reason>"})."""
    eligible: list[str] = []
    removed: dict[str, str] = {}
    for name in sorted(clusters):
        for f in filters:
            reason = f.check(workload, clusters[name], ctx)
            if reason is not None:
                removed[name] = f"{f.name}: {reason}"
                break
        else:
            eligible.append(name)
    return eligible, removed
