"""PinterestCronJob → CronJob (+ PersistentVolumeClaims, ConfigMap)."""

from __future__ import annotations

from pincompile.expand.context import Obj, WorkloadTarget
from pincompile.expand.pod import claims, config_map, config_name, pod_template
from pincompile.models import PinterestCronJob
from pincompile.models.types import duration_seconds


def expand(t: WorkloadTarget[PinterestCronJob]) -> list[Obj]:
    spec = t.resource.spec
    cm = config_name(t.name)
    pod = pod_template(t, restart_policy=spec.restart_policy, config_name=cm,
                       config=spec.template.config)
    job: Obj = {"template": pod}
    if spec.backoff_limit is not None:
        job["backoffLimit"] = spec.backoff_limit
    cron: Obj = {
        "schedule": spec.schedule,
        "timeZone": spec.timezone,
        "concurrencyPolicy": spec.concurrency_policy,
        "jobTemplate": {"metadata": {"labels": t.labels()}, "spec": job},
    }
    if spec.suspend:
        cron["suspend"] = True
    if spec.starting_deadline is not None:
        cron["startingDeadlineSeconds"] = int(duration_seconds(spec.starting_deadline))
    return [t.obj("batch/v1", "CronJob", t.name, cron), *claims(t),
            *config_map(t, cm, spec.template.config)]
