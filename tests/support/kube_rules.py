"""What the in-memory API server (:mod:`tests.support.kube_fake`) knows of each kind: its
resource name and scope, whether it has a ``metadata.generation`` and a status
subresource, which fields cannot change in place (answered with a 422 worded as the API
server words it), and what it fills in on create (a Service's cluster IP)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from reconciler.clients.access import api_error
from reconciler.model import Obj
from tests.support.kube_fields import clone


@dataclass(frozen=True)
class Kind:
    api_version: str
    kind: str
    plural: str
    namespaced: bool = True
    generation: bool = False
    status: bool = True
    """Whether status is a subresource (a write of the object leaves it alone)."""

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def dot_group(self) -> str:
        """``.apps`` (nothing for the core group), as messages name resources."""
        return f".{self.group}" if self.group else ""


_BUILTIN = (
    Kind("v1", "Namespace", "namespaces", namespaced=False),
    Kind("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", namespaced=False,
         status=False),
    Kind("v1", "ResourceQuota", "resourcequotas"),
    Kind("v1", "LimitRange", "limitranges", status=False),
    Kind("networking.k8s.io/v1", "NetworkPolicy", "networkpolicies", generation=True),
    Kind("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", status=False),
    Kind("v1", "ServiceAccount", "serviceaccounts", status=False),
    Kind("v1", "ConfigMap", "configmaps", status=False),
    Kind("v1", "PersistentVolumeClaim", "persistentvolumeclaims"),
    Kind("v1", "Service", "services"),
    Kind("apps/v1", "Deployment", "deployments", generation=True),
    Kind("apps/v1", "ReplicaSet", "replicasets", generation=True),
    Kind("apps/v1", "StatefulSet", "statefulsets", generation=True),
    Kind("apps/v1", "DaemonSet", "daemonsets", generation=True),
    Kind("batch/v1", "Job", "jobs", generation=True),
    Kind("batch/v1", "CronJob", "cronjobs", generation=True),
    Kind("v1", "Pod", "pods"),
    Kind("autoscaling/v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers"),
    Kind("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets", generation=True),
    Kind("networking.k8s.io/v1", "Ingress", "ingresses", generation=True),
    Kind("v1", "Event", "events", status=False),
    Kind("v1", "Node", "nodes", namespaced=False),
    Kind("coordination.k8s.io/v1", "Lease", "leases", status=False),
    Kind("authentication.k8s.io/v1", "TokenReview", "tokenreviews", namespaced=False),
    Kind("authorization.k8s.io/v1", "SubjectAccessReview", "subjectaccessreviews",
         namespaced=False),
    Kind("apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions",
         namespaced=False, generation=True),
)
_KUBEFLOW = (Kind("kubeflow.org/v1", "TFJob", "tfjobs", generation=True),
             Kind("kubeflow.org/v1", "PyTorchJob", "pytorchjobs", generation=True))


def builtin_kinds(*, kubeflow: bool = False) -> dict[tuple[str, str], Kind]:
    """The kinds a cluster serves before any CRD (``kubeflow``: the training operator's)."""
    return {(k.api_version, k.kind): k for k in (*_BUILTIN, *(_KUBEFLOW if kubeflow else ()))}


def kinds_of(crd: Obj) -> Iterator[Kind]:
    """The kinds a CustomResourceDefinition serves (one per served version)."""
    spec = crd["spec"]
    for version in spec.get("versions") or []:
        if version.get("served", True):
            yield Kind(f"{spec['group']}/{version['name']}", spec["names"]["kind"],
                       spec["names"]["plural"], namespaced=spec.get("scope") == "Namespaced",
                       generation=True,
                       status="status" in (version.get("subresources") or {}))


def merge_patch(obj: Obj, patch: Obj) -> Obj:
    """``obj`` with a JSON merge patch applied (RFC 7386: ``None`` removes a key)."""
    out = clone(obj)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_patch(out[key], value)
        else:
            out[key] = clone(value)
    return out


def allocate(kind: Kind, new: Obj, addresses: Iterator[int]) -> None:
    """What the API server fills in on create: a Service's cluster IP(s)."""
    if kind.kind == "Service":
        spec = new.setdefault("spec", {})
        if not spec.get("clusterIP") and spec.get("type") != "ExternalName":
            spec["clusterIP"] = f"10.96.0.{next(addresses)}"
        if spec.get("clusterIP"):
            spec.setdefault("clusterIPs", [spec["clusterIP"]])


def generation_moves(kind: Kind, live: Obj, new: Obj) -> bool:
    """Whether a write moves ``metadata.generation``: any change but to metadata and status
    (and, for a Deployment, a change of its annotations too)."""
    def content(obj: Obj) -> Obj:
        return {k: v for k, v in obj.items() if k not in ("metadata", "status")}

    def annotations(obj: Obj) -> Any:
        return (obj.get("metadata") or {}).get("annotations") or {}

    return content(live) != content(new) or (
        kind.kind == "Deployment" and annotations(live) != annotations(new))


def _spec(obj: Obj) -> dict[str, Any]:
    return obj.get("spec") or {}


def _immutable(path: str, *keys: str) -> Callable[[Obj, Obj], str | None]:
    """A rule: the field at ``spec.KEYS`` may not change once set."""
    def rule(live: Obj, new: Obj) -> str | None:
        before, after = _spec(live), _spec(new)
        for key in keys:
            before, after = before.get(key) or {}, after.get(key) or {}
        if before == after:
            return None
        return f"{path}: Invalid value: {json.dumps(after, sort_keys=True)}: field is immutable"
    return rule


def _job_template(live: Obj, new: Obj) -> str | None:
    """A Job's pod spec may not change (its template's metadata neither, unless the Job
    is suspended)."""
    before, after = _spec(live).get("template") or {}, _spec(new).get("template") or {}
    if before.get("spec") != after.get("spec"):
        return _immutable("spec.template.spec", "template", "spec")(live, new)
    if before != after and not _spec(new).get("suspend"):
        return _immutable("spec.template", "template")(live, new)
    return None


def _service_ip(live: Obj, new: Obj) -> str | None:
    before, after = _spec(live).get("clusterIPs") or [], _spec(new).get("clusterIP")
    if before and after and after != before[0]:
        return f'spec.clusterIPs[0]: Invalid value: []string{{"{after}"}}: may not change once set'
    return None


def _pod(live: Obj, new: Obj) -> str | None:
    def mutable_removed(spec: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in spec.items() if k not in ("activeDeadlineSeconds",
                                                         "tolerations")}
        for lists in ("containers", "initContainers"):
            out[lists] = [{k: v for k, v in c.items() if k != "image"}
                          for c in spec.get(lists) or []]
        return out

    if mutable_removed(_spec(live)) == mutable_removed(_spec(new)):
        return None
    return ("spec: Forbidden: pod updates may not change fields other than "
            "`spec.containers[*].image`,`spec.initContainers[*].image`,"
            "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing "
            "tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it "
            "was previously negative)")


def _claim(live: Obj, new: Obj) -> str | None:
    def without_requests(spec: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in spec.items() if k not in ("resources",
                                                           "volumeAttributesClassName")}

    if without_requests(_spec(live)) == without_requests(_spec(new)):
        return None
    return ("spec: Forbidden: spec is immutable after creation except resources.requests "
            "and volumeAttributesClassName for bound claims")


_SELECTOR = _immutable("spec.selector", "selector")
IMMUTABLE: dict[str, tuple[Callable[[Obj, Obj], str | None], ...]] = {
    "Deployment": (_SELECTOR,),
    "ReplicaSet": (_SELECTOR,),
    "DaemonSet": (_SELECTOR,),
    "StatefulSet": (_SELECTOR,),
    "Job": (_SELECTOR, _job_template),
    "Service": (_service_ip,),
    "Pod": (_pod,),
    "PersistentVolumeClaim": (_claim,),
}
"""Per kind, the rules a change of the object in place must pass."""


def refuse_immutable(kind: Kind, live: Obj, new: Obj) -> None:
    """A 422 naming every immutable field ``new`` changes, as the API server says it."""
    problems = [p for rule in IMMUTABLE.get(kind.kind, ()) if (p := rule(live, new))]
    if problems:
        name = live["metadata"]["name"]
        qualified = f"{kind.kind}{kind.dot_group}"
        text = problems[0] if len(problems) == 1 else f"[{', '.join(problems)}]"
        raise api_error(422, f'{qualified} "{name}" is invalid: {text}', "Invalid")
