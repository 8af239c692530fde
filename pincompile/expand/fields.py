"""Converters of spec fields shared by every container and pod: env vars, resources,
probes, volumes and their mounts and claims, tolerations."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from pincompile.expand.context import Obj, Target, Where, child_name, plain
from pincompile.injection import requested
from pincompile.models import Volume
from pincompile.models.pod import EnvVar, Probe, Probes, Resources
from pincompile.models.types import duration_seconds
from pincompile.models.workloads import Toleration

STORAGE_CLASSES = {"ebs": "pincompute-block", "efs": "pincompute-shared"}
ACCESS_MODES = {"ebs": "ReadWriteOnce", "efs": "ReadWriteMany"}
SHARED_NOMINAL_SIZE = "1Gi"
"""Shared file storage grows elastically; Kubernetes still needs a request."""


def env_var(var: EnvVar, value: str | None = None) -> Obj:
    """``{name, value}`` or ``{name, valueFrom: {secretKeyRef}}``; ``value`` if rendered."""
    if var.secret_ref is not None:
        ref = var.secret_ref
        return {"name": var.name,
                "valueFrom": {"secretKeyRef": {"name": ref.name, "key": ref.key}}}
    return {"name": var.name, "value": var.value if value is None else value}


def resources(res: Resources) -> Obj:
    """Requests as written; limits equal requests unless ``limits`` overrides cpu/memory."""
    requests = requested(res)
    limits = dict(requests)
    if res.limits is not None:
        limits.update({k: v for k, v in (("cpu", res.limits.cpu), ("memory", res.limits.memory))
                       if v is not None})
    return compact(requests=requests, limits=limits)


def compact(**fields: Any) -> Obj:
    """The fields that are set (not None, not empty)."""
    return {k: v for k, v in fields.items() if v is not None and v != {} and v != []}


def _seconds(duration: str) -> int:
    return max(1, math.ceil(duration_seconds(duration)))


def probe(p: Probe, ports: Mapping[str, int], where: Where, target: Target[Any]) -> Obj:
    """A Kubernetes probe; a gRPC probe's named port is resolved to its number."""
    out: Obj = {}
    if p.http is not None:
        out["httpGet"] = {"path": p.http, "port": p.port}
    elif p.tcp:
        out["tcpSocket"] = {"port": p.port}
    elif p.grpc:
        port = ports.get(p.port, 0) if isinstance(p.port, str) else p.port
        if not port:
            target.error((where[0], (*where[1], "port")), "probe-port",
                         f"a grpc probe needs a port number; '{p.port}' is not a port of "
                         "this container", "use the containerPort number")
        out["grpc"] = {"port": port}
    elif p.exec:
        out["exec"] = {"command": list(p.exec)}
    if p.initial_delay is not None:
        out["initialDelaySeconds"] = math.ceil(duration_seconds(p.initial_delay))
    if p.period is not None:
        out["periodSeconds"] = _seconds(p.period)
    if p.timeout is not None:
        out["timeoutSeconds"] = _seconds(p.timeout)
    if p.failure_threshold is not None:
        out["failureThreshold"] = p.failure_threshold
    if p.success_threshold is not None:
        out["successThreshold"] = p.success_threshold
    return out


def probes(ps: Probes | None, ports: Mapping[str, int], where: Where,
           target: Target[Any]) -> Obj:
    out: Obj = {}
    if ps is None:
        return out
    for kind in ("readiness", "liveness", "startup"):
        p = getattr(ps, kind)
        if p is not None:
            out[f"{kind}Probe"] = probe(p, ports, (where[0], (*where[1], "probes", kind)), target)
    return out


def claim_name(target: Target[Any], volume: str) -> str:
    """PVCs are named ``<app>-<volume>``."""
    return child_name(target.name, volume)


def volume(target: Target[Any], v: Volume) -> Obj:
    """The pod volume of a spec volume (ebs/efs become PersistentVolumeClaims)."""
    if v.type == "emptyDir":
        return {"name": v.name, "emptyDir": {"sizeLimit": v.size} if v.size else {}}
    if v.type in STORAGE_CLASSES:
        pvc: Obj = {"claimName": claim_name(target, v.name)}
        if v.read_only:
            pvc["readOnly"] = True
        return {"name": v.name, "persistentVolumeClaim": pvc}
    if v.type == "secret":
        return {"name": v.name, "secret": {"secretName": v.secret_name}}
    return {"name": v.name, "hostPath": {"path": v.path}}


def mount(name: str, path: str, *, read_only: bool = False, sub_path: str | None = None) -> Obj:
    out: Obj = {"name": name, "mountPath": path}
    if read_only:
        out["readOnly"] = True
    if sub_path:
        out["subPath"] = sub_path
    return out


def claim_spec(kind: str, size: str | None, storage_class: str | None) -> Obj:
    """The spec of a PVC for an ``ebs`` (block) or ``efs`` (shared file) volume."""
    return {
        "accessModes": [ACCESS_MODES[kind]],
        "storageClassName": storage_class or STORAGE_CLASSES[kind],
        "resources": {"requests": {"storage": size or SHARED_NOMINAL_SIZE}},
    }


def tolerations(value: str | Sequence[Toleration] | Sequence[Mapping[str, Any]]) -> list[Obj]:
    """``all`` → tolerate every taint; ``none`` → none; else the listed tolerations."""
    if value == "all":
        return [{"operator": "Exists"}]
    if isinstance(value, str):
        return []
    return [plain(t.model_dump(by_alias=True, exclude_none=True) if isinstance(t, Toleration)
                  else t) for t in value]
