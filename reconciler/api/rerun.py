"""A rerun: a PinterestJobSet's Jobs, or a PinterestTrainingJob's TFJob/PyTorchJob, in
every cluster, deleted (their pods with them) and created again from the same object as
pincompile applied it, so they run again from the start. The copy keeps pincompile's
record of what it applied (:mod:`reconciler.plan.applied`), so the reconciler's next pass
finds it unchanged; what the API server generated (uid, a Job's selector and its
controller-uid labels, status) is left out for the server to generate anew."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable

from reconciler.model import Obj
from reconciler.plan.diff import VOLATILE_METADATA

RERUN_KINDS: dict[str, dict[str, str]] = {
    "PinterestJobSet": {"Job": "batch/v1"},
    "PinterestTrainingJob": {"TFJob": "kubeflow.org/v1", "PyTorchJob": "kubeflow.org/v1"},
}
"""App kinds a rerun applies to → the kinds (and apiVersions) it deletes and recreates."""
GENERATED_JOB_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid", "job-name",
                        "batch.kubernetes.io/job-name")


def why_not_rerunnable(kind: str) -> str | None:
    if kind in RERUN_KINDS:
        return None
    return (f"only a {' or a '.join(sorted(RERUN_KINDS))} runs to completion and can run "
            "again" + ("; `restart` restarts its pods" if kind != "PinPod" else ""))


def fresh_copy(live: Obj) -> Obj:
    """``live`` as it was applied: without what the API server generated for it."""
    out = copy.deepcopy(live)
    out.pop("status", None)
    meta = out["metadata"]
    for key in (*VOLATILE_METADATA, "ownerReferences", "finalizers", "deletionTimestamp",
                "deletionGracePeriodSeconds"):
        meta.pop(key, None)
    if out.get("kind") == "Job":
        spec = out.get("spec") or {}
        if not spec.get("manualSelector"):
            spec.pop("selector", None)
        template_meta = (spec.get("template") or {}).get("metadata") or {}
        labels = template_meta.get("labels") or {}
        for key in GENERATED_JOB_LABELS:
            labels.pop(key, None)
        for key in GENERATED_JOB_LABELS:
            (meta.get("labels") or {}).pop(key, None)
    return out


def describe(cluster: str, obj: Obj) -> str:
    meta = obj["metadata"]
    return f"{cluster}: {obj['kind']}/{meta.get('namespace', '')}/{meta['name']}"


def run_rerun(objects: Iterable[tuple[str, Obj]], *, delete: Callable[[str, Obj], bool],
              create: Callable[[str, Obj], object],
              record: Callable[[str, str], None]) -> list[str]:
    """Delete each object (``delete`` waits until it is gone; False when it did not go)
    and create its fresh copy; returns what was run again."""
    done: list[str] = []
    for cluster, live in objects:
        name = describe(cluster, live)
        if not delete(cluster, live):
            record("RerunFailed", f"{name}: the old object did not go away in time; not "
                                  "created again (the reconciler's next pass creates it)")
            continue
        create(cluster, fresh_copy(live))
        done.append(name)
    record("RerunStarted", f"created again: {', '.join(done) or 'nothing'}")
    return done
