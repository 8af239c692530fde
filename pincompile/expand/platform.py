"""What the platform itself needs in every member cluster.

- one PriorityClass per tier (cluster-scoped, in every cluster): ``pincompute-reserved``
  (highest), ``pincompute-ondemand``, ``pincompute-preemptible`` (lowest: the pods that
  are preempted first; they never preempt others themselves);
- a Namespace per project in every cluster where the project has something placed;
- per project, cluster and tier a ResourceQuota ``pincompute-<tier>`` scoped to the tier's
  PriorityClass, sized to the cluster's share of the project's quota (from the plan);
  storage and ephemeral storage, which Kubernetes cannot scope by priority, are summed over
  the tiers into one unscoped ResourceQuota ``pincompute-storage``;
- a DaemonSet in namespace ``pincompute-sidecars`` for every daemon-mode PinterestSideCar,
  in the clusters the plan lists for it.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from pincompile.catalog import Entry
from pincompile.expand.context import (
    LABEL_APP,
    PLATFORM_PROJECT,
    Obj,
    Run,
    Target,
    priority_class,
)
from pincompile.expand.pod import sidecar_container, tolerations, volume, volume_claims
from pincompile.injection import GPU
from pincompile.models import TIERS, Cluster, PinterestSideCar, Project
from pincompile.models.types import format_quantity

SIDECAR_NAMESPACE = "pincompute-sidecars"
SIDECAR_TIER = "reserved"
PRIORITIES = {"reserved": 100000, "ondemand": 10000, "preemptible": 100}
ANNOTATION_OWNERS = "pincompute.io/owners"
#: plan quota resource → ResourceQuota key, for the per-tier (PriorityClass-scoped) quotas
SCOPED = {"cpu": "requests.cpu", "memory": "requests.memory", GPU: f"requests.{GPU}",
          "pods": "pods"}
#: ... and for the one unscoped storage quota
UNSCOPED = {"storage": "requests.storage", "ephemeral-storage": "requests.ephemeral-storage"}

Placed = tuple[str, Obj, Entry[Any]]
"""(cluster, object, the spec it came from)."""


def expand(run: Run) -> Iterator[Placed]:
    yield from _priority_classes(run)
    yield from _namespaces(run)
    yield from _sidecar_daemons(run)


def _priority_classes(run: Run) -> Iterator[Placed]:
    for name, cluster in run.clusters.items():
        for tier in TIERS:
            t = Target(run, cluster, cluster, PLATFORM_PROJECT, "", tier)
            obj = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                   "metadata": t.metadata(priority_class(tier), namespaced=False),
                   "value": PRIORITIES[tier], "globalDefault": False,
                   "preemptionPolicy": "Never" if tier == "preemptible"
                   else "PreemptLowerPriority",
                   "description": f"pincompute {tier} tier"}
            yield name, obj, cluster


def _namespaces(run: Run) -> Iterator[Placed]:
    """Namespaces and ResourceQuotas of every project where it has something placed."""
    where: set[tuple[str, str]] = {(p, c) for p, _, c in run.plan.quotas}
    for decision in run.plan.decisions.values():
        where.update((decision.project, s.cluster) for s in decision.shards)
    for project_name, cluster_name in sorted(where):
        project = run.projects.get(project_name)
        cluster = run.clusters.get(cluster_name)
        if project is None or cluster is None:
            continue
        ns = project.resource.namespace
        t = Target(run, project, cluster, project_name, ns, None)
        owners = ",".join(project.resource.spec.owners)
        meta = t.metadata(ns, namespaced=False,
                          annotations={ANNOTATION_OWNERS: owners} if owners else None)
        yield cluster_name, {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}, project
        yield from _quotas(run, project, cluster, ns)


def _quotas(run: Run, project: Entry[Project], cluster: Entry[Cluster], ns: str
            ) -> Iterator[Placed]:
    storage: dict[str, Decimal] = {}
    for tier in TIERS:
        hard = run.plan.quotas.get((project.resource.name, tier, cluster.resource.name))
        if hard is None:
            continue
        t = Target(run, project, cluster, project.resource.name, ns, tier)
        scoped = {SCOPED[k]: format_quantity(v, k) for k, v in sorted(hard.items())
                  if k in SCOPED}
        for k, v in hard.items():
            if k in UNSCOPED:
                storage[k] = storage.get(k, Decimal(0)) + v
        selector = {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In",
                                          "values": [priority_class(tier)]}]}
        yield cluster.resource.name, t.obj(
            "v1", "ResourceQuota", f"pincompute-{tier}",
            {"hard": scoped, "scopeSelector": selector}), project
    if storage:
        t = Target(run, project, cluster, project.resource.name, ns, None)
        limits = {UNSCOPED[k]: format_quantity(v, k) for k, v in sorted(storage.items())}
        yield cluster.resource.name, t.obj("v1", "ResourceQuota", "pincompute-storage",
                                           {"hard": limits}), project


def _sidecar_daemons(run: Run) -> Iterator[Placed]:
    namespaces: set[str] = set()
    for name, entry in run.catalog.sidecars.items():
        if entry.resource.spec.mode != "daemon":
            continue
        for cluster_name in run.plan.sidecar_daemons.get(name, []):
            cluster = run.clusters.get(cluster_name)
            if cluster is None:
                continue
            t = Target(run, entry, cluster, PLATFORM_PROJECT, SIDECAR_NAMESPACE, SIDECAR_TIER)
            if cluster_name not in namespaces:
                namespaces.add(cluster_name)
                meta = t.metadata(SIDECAR_NAMESPACE, namespaced=False,
                                  labels={LABEL_APP: SIDECAR_NAMESPACE})
                yield cluster_name, {"apiVersion": "v1", "kind": "Namespace",
                                     "metadata": meta}, entry
            yield cluster_name, _daemon_set(t), entry
            for claim in volume_claims(t, entry.resource.spec.volumes):
                yield cluster_name, claim, entry


def _daemon_set(t: Target[PinterestSideCar]) -> Obj:
    """A daemon-mode sidecar: its container on every node, without the runtime profile."""
    spec = t.resource.spec
    pod: Obj = {"containers": [sidecar_container(t, t.entry, t.template_values())],
                "priorityClassName": priority_class(SIDECAR_TIER)}
    if spec.volumes:
        pod["volumes"] = [volume(t, v) for v in spec.volumes]
    tols = tolerations(spec.tolerations)
    if tols:
        pod["tolerations"] = tols
    if spec.host_network:
        pod["hostNetwork"] = True
        pod["dnsPolicy"] = "ClusterFirstWithHostNet"
    body = {"selector": {"matchLabels": t.selector()},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {"metadata": {"labels": t.labels()}, "spec": pod}}
    return t.obj("apps/v1", "DaemonSet", t.name, body)
