"""What a rotation asks of the apps on a node before and after moving them: which
PodDisruptionBudgets allow no disruption now (the next batch waits for them), which
workload each moved pod belongs to, and whether those workloads are back to their
desired Ready replicas (the old node is removed only then)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from reconciler.clients import read
from reconciler.clients.access import ClusterAccess
from reconciler.kinds import KindInfo
from reconciler.model import Obj
from reconciler.status.document import counts

PDB = KindInfo("policy/v1", "PodDisruptionBudget")
WAITED_KINDS = {"Deployment": "apps/v1", "StatefulSet": "apps/v1"}
"""Workloads a rotation waits for; a Job's pods are recreated by it and run to their end."""


def matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Whether a label selector (matchLabels, matchExpressions) selects ``labels``; an
    empty selector selects everything, as a PodDisruptionBudget's does."""
    selector = selector or {}
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    return all(_holds(e, labels) for e in selector.get("matchExpressions") or [])


def _holds(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, op = expression.get("key"), expression.get("operator")
    value = labels.get(str(key))
    inside = value is not None and value in set(expression.get("values") or [])
    return {"In": inside, "NotIn": not inside, "Exists": value is not None,
            "DoesNotExist": value is None}.get(str(op), False)


def budgets(conn: ClusterAccess) -> list[Obj]:
    """Every PodDisruptionBudget of the cluster (one LIST)."""
    return conn.list(PDB)["items"]


def blocking(pods: Iterable[Obj], pdbs: Sequence[Obj]) -> list[str]:
    """The budgets covering ``pods`` that allow no disruption now, for people."""
    found: dict[str, str] = {}
    for pod in pods:
        meta = pod.get("metadata") or {}
        labels = meta.get("labels") or {}
        for pdb in pdbs:
            pmeta, status = pdb.get("metadata") or {}, pdb.get("status") or {}
            if pmeta.get("namespace") != meta.get("namespace") \
                    or not matches((pdb.get("spec") or {}).get("selector"), labels):
                continue
            if int(status.get("disruptionsAllowed") or 0) < 1:
                name = f"{pmeta.get('namespace')}/{pmeta.get('name')}"
                found[name] = (f"PodDisruptionBudget {name} allows no disruption now "
                               f"({status.get('currentHealthy', '?')} healthy, "
                               f"{status.get('desiredHealthy', '?')} needed)")
    return [found[k] for k in sorted(found)]


def workload_of(pod: Mapping[str, Any]) -> str | None:
    """``Kind/namespace/name`` of the Deployment or StatefulSet that runs ``pod``."""
    meta = pod.get("metadata") or {}
    namespace = meta.get("namespace") or ""
    for ref in meta.get("ownerReferences") or []:
        if ref.get("kind") == "StatefulSet":
            return f"StatefulSet/{namespace}/{ref.get('name')}"
        if ref.get("kind") == "ReplicaSet":
            name = str(ref.get("name") or "")
            suffix = (meta.get("labels") or {}).get("pod-template-hash")
            if suffix and name.endswith(f"-{suffix}"):
                return f"Deployment/{namespace}/{name[:-len(suffix) - 1]}"
    return None


def not_back(conn: ClusterAccess, affected: Iterable[str]) -> list[str]:
    """The workloads of ``affected`` not back to their desired Ready replicas, each as
    ``Kind/namespace/name ready/desired`` (a deleted one is back: nothing to wait for)."""
    waiting = []
    for ref in sorted(set(affected)):
        kind, _, rest = ref.partition("/")
        namespace, _, name = rest.partition("/")
        if kind not in WAITED_KINDS:
            continue
        live = read.get(conn, {"apiVersion": WAITED_KINDS[kind], "kind": kind,
                               "metadata": {"name": name, "namespace": namespace}})
        if live is None:
            continue
        ready, desired = counts(live)
        observed = int((live.get("status") or {}).get("observedGeneration") or 0)
        if ready < desired or observed < int(live["metadata"].get("generation") or 0):
            waiting.append(f"{ref} {ready}/{desired} Ready")
    return waiting
