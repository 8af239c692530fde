"""PinterestDaemon → DaemonSet (+ PersistentVolumeClaims, ConfigMap)."""

from __future__ import annotations

from pincompile.expand.context import Obj, WorkloadTarget
from pincompile.expand.fields import tolerations
from pincompile.expand.pod import claims, config_map, config_name, pod_template
from pincompile.models import PinterestDaemon


def expand(t: WorkloadTarget[PinterestDaemon]) -> list[Obj]:
    spec = t.resource.spec
    cm = config_name(t.name)
    pod = pod_template(t, config_name=cm, config=spec.template.config,
                       node_selector=spec.node_selector,
                       pod_tolerations=tolerations(spec.tolerations))
    ds = {"selector": {"matchLabels": t.selector()}, "template": pod,
          "updateStrategy": {"type": "RollingUpdate"}}
    return [t.obj("apps/v1", "DaemonSet", t.name, ds), *claims(t),
            *config_map(t, cm, spec.template.config)]
