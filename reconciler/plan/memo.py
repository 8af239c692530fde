"""The plan memo of a long-running reconciler: which objects may skip their dry-run, or
their whole plan, because nothing that decides it has changed since the last pass."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from reconciler.clients.read import Key
from reconciler.model import Obj
from reconciler.plan import applied
from reconciler.plan.change import Action, Change

Inputs = tuple[str, bool]
"""What a plan of one object depends on besides the live object: the digest of its
desired object (as compiled and decided, before the record) and whether it is
autoscaled."""


@dataclass
class PlanMemo:
    """For a long-running reconciler: each object a plan found unchanged, with the
    fingerprint of its desired content and the live ``resourceVersion`` it was compared
    with. When both are the same at the next plan, nothing that decides the dry-run's
    answer has changed (the object was not written since, and we would apply the same
    content), so the object is unchanged again without a dry-run request. Any other
    outcome, or any write to the object (a new ``resourceVersion``), plans it afresh.

    Cheaper still (:meth:`reused`): an object found unchanged whose desired input has the
    same digest and autoscaling as then, and whose live object is the very one compared
    then (a watch cache replaces an object on each of its events), is unchanged again
    without even being stamped: a push's plan costs the digest lookups, not a record per
    object of every app."""

    unchanged: dict[Key, tuple[str, str]] = field(default_factory=dict)
    found: dict[Key, tuple[Inputs, Obj, Change]] = field(default_factory=dict)
    """Objects found unchanged: their inputs, live object and change (see :meth:`reused`)."""

    def still_unchanged(self, key: Key, desired: Obj, live: Obj) -> bool:
        return self.unchanged.get(key) == _memo_entry(desired, live)

    def reused(self, key: Key, inputs: Inputs, live: Obj | None) -> Change | None:
        """The last plan's change of ``key`` (a copy) when it found it unchanged with these
        ``inputs`` against this very ``live`` object; else None."""
        found = self.found.get(key)
        if found is None or found[1] is not live or found[0] != inputs:
            return None
        return replace(found[2])

    def record(self, change: Change, inputs: Inputs | None = None) -> None:
        if change.action is Action.UNCHANGED and change.desired is not None \
                and change.live is not None:
            self.unchanged[change.key] = _memo_entry(change.desired, change.live)
        else:
            self.unchanged.pop(change.key, None)
        if inputs is not None and change.action is Action.UNCHANGED and not change.restamp \
                and change.live is not None:
            self.found[change.key] = (inputs, change.live, change)
        else:
            self.found.pop(change.key, None)

    def record_writes(self, done: dict[Action, list[Change]]) -> None:
        """What a pass wrote is unchanged at the ``resourceVersion`` the API server answered
        the write with: the next plan skips its dry-run until anyone writes the object
        again (else the first push after serve's first pass dry-ran all it created)."""
        for change in (*done[Action.CREATE], *done[Action.UPDATE], *done[Action.REPLACE]):
            if change.desired is not None and change.predicted is not None \
                    and (change.predicted.get("metadata") or {}).get("resourceVersion"):
                self.record(Change(Action.UNCHANGED, change.key, desired=change.desired,
                                   live=change.predicted))

    def keep_only(self, keys: set[Key]) -> None:
        for key in set(self.unchanged) - keys:
            del self.unchanged[key]
        for key in set(self.found) - keys:
            del self.found[key]


def _memo_entry(desired: Obj, live: Obj) -> tuple[str, str]:
    """The desired content's record (every desired object of a plan is stamped: see
    :func:`applied.stamp`) and the live ``resourceVersion``."""
    fingerprint = applied.recorded(desired) or applied.digest(desired)
    return fingerprint, str((live.get("metadata") or {}).get("resourceVersion") or "")
