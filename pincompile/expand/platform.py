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
    LABEL_PROJECT,
    PLATFORM_PROJECT,
    Expansion,
    Obj,
    Target,
    priority_class,
)
from pincompile.expand.fields import tolerations, volume
from pincompile.expand.pod import (
    LABEL_NETWORK,
    platform_security,
    sidecar_container,
    tier_affinity,
    volume_claims,
)
from pincompile.expand.security import container_context, pod_context, tmp_volume
from pincompile.injection import GPU, defaults_of
from pincompile.models import TIERS, Cluster, PinterestSideCar, Project
from pincompile.models.types import format_quantity
from pincompile.podsecurity import Level, daemon_level, namespace_level

SIDECAR_NAMESPACE = "pincompute-sidecars"
SIDECAR_TIER = "reserved"
PRIORITIES = {"reserved": 100000, "ondemand": 10000, "preemptible": 100}
ANNOTATION_OWNERS = "pincompute.io/owners"
PSA = "pod-security.kubernetes.io"
BUFFER_NAMESPACE = "pincompute-buffer"
BUFFER_PRIORITY_CLASS = "pincompute-buffer"
BUFFER_PRIORITY = -10
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
#: plan quota resource → ResourceQuota key, for the per-tier (PriorityClass-scoped) quotas
SCOPED = {"cpu": "requests.cpu", "memory": "requests.memory", GPU: f"requests.{GPU}",
          "pods": "pods"}
#: ... and for the one unscoped storage quota
UNSCOPED = {"storage": "requests.storage", "ephemeral-storage": "requests.ephemeral-storage"}

Placed = tuple[str, Obj, Entry[Any]]
"""(cluster, object, the spec it came from)."""


def expand(run: Expansion) -> Iterator[Placed]:
    yield from _priority_classes(run)
    yield from _namespaces(run)
    yield from _sidecar_daemons(run)
    yield from _buffers(run)


def _priority_classes(run: Expansion) -> Iterator[Placed]:
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
        if cluster.resource.spec.buffer is not None:
            t = Target(run, cluster, cluster, PLATFORM_PROJECT, "", None)
            yield name, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                         "metadata": t.metadata(BUFFER_PRIORITY_CLASS, namespaced=False),
                         "value": BUFFER_PRIORITY, "globalDefault": False,
                         "preemptionPolicy": "Never",
                         "description": "pincompute burst buffer: placeholders any pod "
                                        "preempts"}, cluster


def _namespaces(run: Expansion) -> Iterator[Placed]:
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
        level = namespace_level(project.resource.spec.policy, _profile(run))
        meta = t.metadata(ns, namespaced=False, labels=pod_security_labels(level),
                          annotations={ANNOTATION_OWNERS: owners} if owners else None)
        yield cluster_name, {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}, project
        yield from _quotas(run, project, cluster, ns)
        yield from _limit_range(run, project, cluster, ns)
        yield from ((cluster_name, o, project) for o in tenancy(t, project.resource))


def _quotas(run: Expansion, project: Entry[Project], cluster: Entry[Cluster], ns: str
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


def _profile(run: Expansion) -> Any:
    runtime = run.catalog.runtime
    return runtime.resource if runtime is not None else None


def pod_security_labels(level: Level) -> dict[str, str]:
    """Pod Security admission labels: enforce, audit and warn at ``level``."""
    return {f"{PSA}/{mode}": level for mode in ("enforce", "audit", "warn")} | {
        f"{PSA}/enforce-version": "latest"}


def tenancy(t: Target[Project], project: Project) -> list[Obj]:
    """What isolates a project in its namespace: ingress only from its own namespaces (and
    namespaces that belong to no project, such as the platform's and ingress controllers'),
    none at all into ``network: bridge`` pods, and ``view`` for the project's owners."""
    own = {"matchExpressions": [{"key": LABEL_PROJECT, "operator": "In",
                                 "values": sorted({t.project, PLATFORM_PROJECT})}]}
    no_project = {"matchExpressions": [{"key": LABEL_PROJECT, "operator": "DoesNotExist"}]}
    not_bridge = {"matchExpressions": [{"key": LABEL_NETWORK, "operator": "NotIn",
                                        "values": ["bridge"]}]}
    out = [
        t.obj("networking.k8s.io/v1", "NetworkPolicy", "pincompute-tenant-ingress", {
            "podSelector": not_bridge, "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"namespaceSelector": own},
                                  {"namespaceSelector": no_project}]}]}),
        t.obj("networking.k8s.io/v1", "NetworkPolicy", "pincompute-bridge-deny-ingress", {
            "podSelector": {"matchLabels": {LABEL_NETWORK: "bridge"}},
            "policyTypes": ["Ingress"]}),
    ]
    if project.spec.owners:
        out.append(t.obj("rbac.authorization.k8s.io/v1", "RoleBinding", "pincompute-owners-view",
                         None) | {
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "view"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                          "name": owner} for owner in project.spec.owners]})
    return out


def _limit_range(run: Expansion, project: Entry[Project], cluster: Entry[Cluster], ns: str
                 ) -> Iterator[Placed]:
    """The RuntimeProfile's ``defaultResources`` as the namespace's LimitRange, so pods that
    others create there (``kubectl run``, operators) get the same defaults the compiler
    writes into its own pods."""
    defaults = defaults_of(run.catalog)
    if defaults is None:
        return
    requests = {k: v for k, v in (("cpu", defaults.cpu), ("memory", defaults.memory)) if v}
    if not requests:
        return
    limits = dict(requests)
    if defaults.limits is not None:
        limits.update({k: v for k, v in (("cpu", defaults.limits.cpu),
                                         ("memory", defaults.limits.memory)) if v})
    t = Target(run, project, cluster, project.resource.name, ns, None)
    yield cluster.resource.name, t.obj("v1", "LimitRange", "pincompute-defaults", {"limits": [
        {"type": "Container", "defaultRequest": requests, "default": limits}]}), project


def _buffers(run: Expansion) -> Iterator[Placed]:
    """A cluster's ``buffer``: a Deployment of pause pods at a negative priority on the
    ondemand nodes. Any real pod preempts them at once (the overprovisioning pattern), and
    the replacements the Deployment creates wait for room, which the cluster autoscaler
    (where there is one) adds. Placement does not count them."""
    for name, cluster in run.clusters.items():
        buffer = cluster.resource.spec.buffer
        if buffer is None:
            continue
        t = Target(run, cluster, cluster, PLATFORM_PROJECT, BUFFER_NAMESPACE, None)
        meta = t.metadata(BUFFER_NAMESPACE, namespaced=False,
                          labels={LABEL_APP: BUFFER_NAMESPACE,
                                  **pod_security_labels(namespace_level(None, _profile(run)))})
        yield name, {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}, cluster
        size = {"cpu": buffer.cpu, "memory": buffer.memory}
        security = platform_security(t)
        pod: Obj = {"containers": [{"name": "placeholder", "image": PAUSE_IMAGE,
                                    "resources": {"requests": size, "limits": size},
                                    "securityContext": container_context(security, None)}],
                    "priorityClassName": BUFFER_PRIORITY_CLASS,
                    "terminationGracePeriodSeconds": 0,
                    "affinity": tier_affinity("ondemand"),
                    "automountServiceAccountToken": False,
                    "securityContext": pod_context(security)}
        labels = {LABEL_APP: "buffer"}
        yield name, t.obj("apps/v1", "Deployment", "buffer", {
            "replicas": buffer.replicas, "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": {**t.labels(), **labels}}, "spec": pod}},
            labels=labels), cluster


def _sidecar_daemons(run: Expansion) -> Iterator[Placed]:
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
                level = daemon_level(run.catalog.sidecars.values(), _profile(run))
                meta = t.metadata(SIDECAR_NAMESPACE, namespaced=False,
                                  labels={LABEL_APP: SIDECAR_NAMESPACE,
                                          **pod_security_labels(level)})
                yield cluster_name, {"apiVersion": "v1", "kind": "Namespace",
                                     "metadata": meta}, entry
            yield cluster_name, _daemon_set(t), entry
            for claim in volume_claims(t, entry.resource.spec.volumes):
                yield cluster_name, claim, entry


def _daemon_set(t: Target[PinterestSideCar]) -> Obj:
    """A daemon-mode sidecar: its container on every node, without the runtime profile's
    containers, env and volumes (with its security defaults)."""
    spec = t.resource.spec
    pod: Obj = {"containers": [sidecar_container(t, t.entry, t.template_values())],
                "priorityClassName": priority_class(SIDECAR_TIER),
                "automountServiceAccountToken": False,
                "securityContext": pod_context(platform_security(t))}
    volumes = [volume(t, v) for v in spec.volumes]
    tmp = tmp_volume(pod["containers"])
    if volumes or tmp:
        pod["volumes"] = [*volumes, *([tmp] if tmp else [])]
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
