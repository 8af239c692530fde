"""The kinds pincompile manages, in the order they are applied (and pruned in reverse).

A dependency comes before what uses it, as ``kubectl`` and Argo CD order a sync: the
namespace and priority classes first, then quota and policy, then configuration, storage
and services, then workloads, and last what points at workloads (HPA, PDB, Ingress).

Only kinds the compiler produces: the reconciler watches and lists each of them in every
member cluster, and ``contrib/serve/rbac-member.yaml`` grants exactly these (no Secret,
ServiceAccount, Role or StatefulSet: no spec kind makes one, so serve can read none;
``tests/reconciler/serve/test_record.py`` holds the three to each other), beside ``get``
on ReplicaSets (the app of one an Event names: :mod:`reconciler.api.member_events`).
"""

from __future__ import annotations

from dataclasses import dataclass

from pincompile.manifest import LABEL_KIND


@dataclass(frozen=True)
class KindInfo:
    api_version: str
    kind: str
    namespaced: bool = True
    data: bool = False
    """Pruned only with ``--prune-data`` (it holds state a user would lose)."""
    selector: str = ""
    """A label selector the objects of this kind we apply match, beside managed-by, and
    the objects controllers make from our templates do not: a LIST or watch of Pods by
    managed-by alone also returned every pod of every Deployment, all discarded."""

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]


MANAGED_KINDS: tuple[KindInfo, ...] = (
    KindInfo("v1", "Namespace", namespaced=False, data=True),
    KindInfo("scheduling.k8s.io/v1", "PriorityClass", namespaced=False),
    KindInfo("v1", "ResourceQuota"),
    KindInfo("v1", "LimitRange"),
    KindInfo("networking.k8s.io/v1", "NetworkPolicy"),
    KindInfo("rbac.authorization.k8s.io/v1", "RoleBinding"),
    KindInfo("v1", "ConfigMap"),
    KindInfo("v1", "PersistentVolumeClaim", data=True),
    KindInfo("v1", "Service"),
    KindInfo("apps/v1", "Deployment"),
    KindInfo("apps/v1", "DaemonSet"),
    KindInfo("batch/v1", "Job"),
    KindInfo("batch/v1", "CronJob"),
    KindInfo("v1", "Pod", selector=f"{LABEL_KIND}=PinPod"),  # only PinPods are bare Pods
    KindInfo("kubeflow.org/v1", "TFJob"),
    KindInfo("kubeflow.org/v1", "PyTorchJob"),
    KindInfo("autoscaling/v2", "HorizontalPodAutoscaler"),
    KindInfo("policy/v1", "PodDisruptionBudget"),
    KindInfo("networking.k8s.io/v1", "Ingress"),
)
_BY_KIND = {k.kind: k for k in MANAGED_KINDS}
_ORDER = {k.kind: i for i, k in enumerate(MANAGED_KINDS)}


def info(kind: str) -> KindInfo | None:
    """What pincompile knows of ``kind`` (None: a kind it does not manage)."""
    return _BY_KIND.get(kind)


def order(kind: str) -> int:
    """Apply order of ``kind`` (unknown kinds after every known one)."""
    return _ORDER.get(kind, len(_ORDER))
