"""What a pass wrote needs no dry-run at the next plan while nobody writes it again: the
memo learns each write at the ``resourceVersion`` the API server answered it with."""

from __future__ import annotations

from reconciler.plan import applied
from reconciler.plan.change import Action, Change
from reconciler.plan.memo import PlanMemo


def configmap(value: str, version: str = "") -> dict:  # type: ignore[type-arg]
    meta = {"name": "conf", "namespace": "shop", "annotations": {"pincompute.io/revision": "a"}}
    if version:
        meta["resourceVersion"] = version
    return applied.stamp({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
                          "data": {"k": value}})


KEY = ("ConfigMap", "shop", "conf")


def done(*changes: Change) -> dict[Action, list[Change]]:
    out: dict[Action, list[Change]] = {a: [] for a in Action}
    for change in changes:
        out[change.action].append(change)
    return out


def test_a_written_object_is_unchanged_at_the_version_the_write_answered() -> None:
    for action in (Action.CREATE, Action.UPDATE, Action.REPLACE):
        memo = PlanMemo()
        desired = configmap("1")
        memo.record_writes(done(Change(action, KEY, desired=desired,
                                          predicted=configmap("1", "17"))))
        assert memo.still_unchanged(KEY, desired, configmap("1", "17")), action
        # written again by anyone since, or another desired content: planned afresh
        assert not memo.still_unchanged(KEY, desired, configmap("1", "18"))
        assert not memo.still_unchanged(KEY, configmap("2"), configmap("1", "17"))


def test_prunes_and_answers_without_a_version_are_not_remembered() -> None:
    memo = PlanMemo()
    desired = configmap("1")
    memo.record_writes(done(
        Change(Action.CREATE, KEY, desired=desired, predicted=configmap("1")),
        Change(Action.PRUNE, ("ConfigMap", "shop", "old"), live=configmap("0", "3"))))
    assert memo.unchanged == {}
