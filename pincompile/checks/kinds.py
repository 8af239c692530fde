"""Rules for one kind each: rollout progress, training job roles."""

from __future__ import annotations

from collections.abc import Iterator

from pincompile.checks.specs import SINGLE_ROLES, Specs
from pincompile.diagnostics import Diagnostic
from pincompile.models import (
    PinApp,
    PinterestService,
    PinterestTrainingJob,
)


def _is_zero(value: int | str) -> bool:
    return value == 0 or (isinstance(value, str) and value.rstrip("%") in ("0", "00", "000"))


def rollout_progress(specs: Specs) -> Iterator[Diagnostic]:
    """A rollout may add or remove at least one pod at a time."""
    for entry in specs.workloads:
        w = entry.resource
        if not isinstance(w, PinApp | PinterestService):
            continue
        r = w.spec.rollout
        if _is_zero(r.max_surge) and _is_zero(r.max_unavailable):
            yield entry.at("spec", "rollout", "maxUnavailable").error(
                "invalid-rollout",
                "rollout.maxSurge and rollout.maxUnavailable are both 0: no pod could ever be "
                "replaced", "allow a surge (e.g. maxSurge: 1 or 25%) or some unavailability")


def training_roles(specs: Specs) -> Iterator[Diagnostic]:
    """A PyTorch job has at most one master; a TensorFlow job at most one chief and one
    evaluator (the role names themselves are checked by the schema)."""
    for entry in specs.workloads:
        w = entry.resource
        if not isinstance(w, PinterestTrainingJob):
            continue
        for role in SINGLE_ROLES.get(w.spec.framework, ()):
            count = w.spec.replicas.get(role, 0)
            if count > 1:
                yield entry.at("spec", "replicas", role).error(
                    "invalid-replicas",
                    f"a {w.spec.framework} job has at most one {role}; got {count}",
                    f"set replicas.{role}: 1 and add workers instead")
