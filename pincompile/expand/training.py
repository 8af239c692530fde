"""PinterestTrainingJob → kubeflow.org/v1 PyTorchJob or TFJob (+ PVCs, ConfigMap).

Each role (``master``/``worker``; ``chief``/``worker``/``ps``/``evaluator``) becomes a
replica spec of the same pod template, labelled with its role; replicas restart on failure.
"""

from __future__ import annotations

from pincompile.expand.context import Obj, WorkloadTarget
from pincompile.expand.pod import claims, config_map, config_name, pod_template
from pincompile.models import PinterestTrainingJob
from pincompile.models.types import duration_seconds

API_VERSION = "kubeflow.org/v1"
LABEL_ROLE = "pincompute.io/role"
#: framework → (kind, field of the replica specs, role → Kubeflow replica type)
FRAMEWORKS: dict[str, tuple[str, str, dict[str, str]]] = {
    "pytorch": ("PyTorchJob", "pytorchReplicaSpecs", {"master": "Master", "worker": "Worker"}),
    "tensorflow": ("TFJob", "tfReplicaSpecs", {"chief": "Chief", "worker": "Worker",
                                               "ps": "PS", "evaluator": "Evaluator"}),
}
RESTART_POLICY = "OnFailure"


def expand(t: WorkloadTarget[PinterestTrainingJob]) -> list[Obj]:
    spec = t.resource.spec
    kind, field, roles = FRAMEWORKS[spec.framework]
    cm = config_name(t.name)
    replica_specs: Obj = {}
    for role, count in spec.replicas.items():
        if count <= 0:
            continue
        pod = pod_template(t, restart_policy=RESTART_POLICY, config_name=cm,
                           config=spec.template.config, labels={LABEL_ROLE: role})
        replica_specs[roles[role]] = {"replicas": count, "restartPolicy": RESTART_POLICY,
                                      "template": pod}
    run = spec.run_policy
    policy: Obj = {"cleanPodPolicy": run.clean_pod_policy}
    if run.backoff_limit is not None:
        policy["backoffLimit"] = run.backoff_limit
    if run.ttl_after_finished is not None:
        policy["ttlSecondsAfterFinished"] = int(duration_seconds(run.ttl_after_finished))
    if run.active_deadline is not None:
        policy["activeDeadlineSeconds"] = int(duration_seconds(run.active_deadline))
    return [t.obj(API_VERSION, kind, t.name, {field: replica_specs, "runPolicy": policy}),
            *claims(t), *config_map(t, cm, spec.template.config)]
