"""PinPod → Pod (+ PersistentVolumeClaims, ConfigMap)."""

from __future__ import annotations

from pincompile.expand.context import Obj, WorkloadTarget
from pincompile.expand.pod import claims, config_map, config_name, pod_template
from pincompile.manifest import ANNOTATION_FAILOVER
from pincompile.models import PinPod


def expand(t: WorkloadTarget[PinPod]) -> list[Obj]:
    spec = t.resource.spec
    cm = config_name(t.name)
    pod = pod_template(t, restart_policy=spec.restart_policy, config_name=cm, config=spec.config)
    obj = t.obj("v1", "Pod", t.name, pod["spec"], labels=pod["metadata"]["labels"],
                annotations={**pod["metadata"].get("annotations", {}),
                             ANNOTATION_FAILOVER: str(spec.failover).lower()})
    return [obj, *claims(t), *config_map(t, cm, spec.config)]
