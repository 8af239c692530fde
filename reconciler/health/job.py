"""batch/Job: Complete is Completed, Failed is Failed (with the controller's reason, e.g.
``BackoffLimitExceeded`` or ``DeadlineExceeded``), suspended is Suspended, else Progressing.

Since Kubernetes 1.31 the controller first sets ``FailureTarget``/``SuccessCriteriaMet``
and only adds ``Failed``/``Complete`` once the Job's pods have terminated; the outcome is
decided at the first, so either counts.
"""

from __future__ import annotations

from reconciler.health.fields import condition, count, is_true, reason_and_message, spec, status
from reconciler.model import Health, Obj, Phase


def health(obj: Obj) -> Health:
    for kind in ("Failed", "FailureTarget"):
        failed = condition(obj, kind)
        if is_true(failed) and failed:
            return Health(Phase.FAILED, reason_and_message(failed, "the job failed"))
    for kind in ("Complete", "SuccessCriteriaMet"):
        if is_true(condition(obj, kind)):
            return Health(Phase.COMPLETED)
    if spec(obj).get("suspend") or is_true(condition(obj, "Suspended")):
        return Health(Phase.SUSPENDED, "the job is suspended")
    st = status(obj)
    completions = spec(obj).get("completions")
    succeeded = count(st.get("succeeded"))
    parts = [f"{count(st.get('active'))} active",
             f"{succeeded} of {completions} succeeded" if completions else f"{succeeded} succeeded"]
    if count(st.get("failed")):
        parts.append(f"{count(st.get('failed'))} failed")
    return Health(Phase.PROGRESSING, ", ".join(parts))
