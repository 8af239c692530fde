"""What one object of a plan needs (:class:`Change`, its :class:`Action`): the unit a plan
is made of, that ``apply`` carries out and ``plan`` shows."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from reconciler.clients.read import Key
from reconciler.model import Obj, ObjectRef
from reconciler.plan import diff


class Action(enum.StrEnum):
    CREATE = "create"
    UPDATE = "update"
    REPLACE = "replace"
    PRUNE = "prune"
    UNCHANGED = "unchanged"
    CONFLICT = "conflict"
    INVALID = "invalid"
    SKIPPED = "skipped"


@dataclass
class Change:
    """What one object needs."""

    action: Action
    key: Key
    desired: Obj | None = None
    live: Obj | None = None
    predicted: Obj | None = None
    """The dry-run's answer: the object as applying would make it."""
    reason: str = ""
    restamp: bool = False
    """Unchanged, but its record is stale (:func:`applied.stale`): ``apply`` applies it
    once more (its content is what the object holds: only the record and, for a workload
    that became autoscaled, the replicas' manager change), so that the next pass needs no
    dry-run — only if the object is still at the resourceVersion the pass read, and never
    one a rollout gate holds (:attr:`ClusterPlan.gated`). Never a difference: ``plan``
    shows it unchanged."""

    @property
    def name(self) -> str:
        kind, namespace, name = self.key
        return f"{kind}/{namespace + '/' if namespace else ''}{name}"

    def ref(self, cluster: str) -> ObjectRef:
        obj = self.desired or self.live or {}
        kind, namespace, name = self.key
        return ObjectRef(cluster, str(obj.get("apiVersion", "")), kind, namespace or None, name)

    def diff(self) -> str:
        return diff.unified(self.live, self.predicted, self.name)
