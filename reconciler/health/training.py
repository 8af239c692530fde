"""kubeflow.org training jobs (PyTorchJob, TFJob and the other Kubeflow training kinds):
the training operator's job conditions ``Created``, ``Running``, ``Restarting``,
``Suspended``, ``Succeeded``, ``Failed``."""

from __future__ import annotations

from reconciler.health.fields import condition, is_true, reason_and_message
from reconciler.model import Health, Obj, Phase

KINDS = ("PyTorchJob", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob")


def health(obj: Obj) -> Health:
    failed = condition(obj, "Failed")
    if is_true(failed) and failed:
        return Health(Phase.FAILED, reason_and_message(failed, "the training job failed"))
    if is_true(condition(obj, "Succeeded")):
        return Health(Phase.COMPLETED)
    if is_true(condition(obj, "Suspended")):
        return Health(Phase.SUSPENDED, "the training job is suspended")
    for kind in ("Restarting", "Running", "Created"):
        cond = condition(obj, kind)
        if is_true(cond) and cond:
            return Health(Phase.PROGRESSING,
                          cond.get("message") or cond.get("reason") or kind.lower())
    return Health(Phase.PROGRESSING, "waiting for the training operator")
