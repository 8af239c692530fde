"""The plan memo of a long-running reconciler: which objects may skip their dry-run."""

from __future__ import annotations

import copy

import pytest

from reconciler.plan import applied
from reconciler.plan.change import Action, Change
from reconciler.plan.cluster_plan import Options, plan_cluster
from reconciler.plan.memo import PlanMemo


def deployment(image: str, version: str, revision: str = "a") -> dict:  # type: ignore[type-arg]
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "resourceVersion": version,
                         "annotations": {"pincompute.io/revision": revision}},
            "spec": {"template": {"spec": {"containers": [{"name": "m", "image": image}]}}}}


KEY = ("Deployment", "shop", "web")


def test_an_unchanged_object_skips_its_dry_run_only_while_both_sides_stay_the_same() -> None:
    memo = PlanMemo()
    desired, live = deployment("web:1", ""), deployment("web:1", "41")
    assert not memo.still_unchanged(KEY, desired, live), "nothing remembered yet"
    memo.record(Change(Action.UNCHANGED, KEY, desired=desired, live=live))
    assert memo.still_unchanged(KEY, desired, live)
    # another commit that leaves the object alone: only the revision annotation differs
    assert memo.still_unchanged(KEY, deployment("web:1", "", revision="b"), live)
    # the desired content changed, or someone (a user, a controller) wrote the object
    assert not memo.still_unchanged(KEY, deployment("web:2", ""), live)
    assert not memo.still_unchanged(KEY, desired, deployment("web:1", "42"))


def test_any_other_outcome_or_an_object_no_longer_desired_forgets_it() -> None:
    memo = PlanMemo()
    desired, live = deployment("web:1", ""), deployment("web:1", "41")
    memo.record(Change(Action.UNCHANGED, KEY, desired=desired, live=live))
    memo.record(Change(Action.UPDATE, KEY, desired=copy.deepcopy(desired), live=live))
    assert not memo.still_unchanged(KEY, desired, live)
    memo.record(Change(Action.UNCHANGED, KEY, desired=desired, live=live))
    memo.keep_only(set())
    assert memo.unchanged == {}


class NoRequests:
    """A connection that has a name and nothing else."""

    name = "rt-a"


def planned(desired: dict, live: dict, memo: PlanMemo,  # type: ignore[type-arg]
            digests: applied.Digests) -> Change:
    """One object planned as a long-running reconciler plans it (no request may be made:
    the connection has no client)."""
    plan = plan_cluster(NoRequests(), [desired], {KEY: live}, Options(),  # type: ignore[arg-type]
                        memo=memo, digests=digests)
    assert len(plan.changes) == 1
    return plan.changes[0]


def test_an_object_unchanged_on_both_sides_is_reused_without_being_stamped(
        monkeypatch: pytest.MonkeyPatch) -> None:
    memo, digests = PlanMemo(), applied.Digests()
    desired = deployment("web:1", "")
    del desired["metadata"]["resourceVersion"]
    live = {**applied.stamp(desired), "metadata": {
        **applied.stamp(desired)["metadata"], "resourceVersion": "41"}}
    first = planned(desired, live, memo, digests)
    assert first.action is Action.UNCHANGED and KEY in memo.found
    stamped: list[int] = []
    real = applied.stamp
    monkeypatch.setattr(applied, "stamp", lambda *a: stamped.append(1) or real(*a))
    # the next commit left the app alone: its objects are shallow copies at a new revision
    moved = {**desired, "metadata": {**desired["metadata"],
                                     "annotations": {"pincompute.io/revision": "b"}}}
    again = planned(moved, live, memo, digests.carried())
    assert (again.action, stamped) == (Action.UNCHANGED, [])
    assert again is not memo.found[KEY][2]  # a copy: a pass may change its changes
    # the watch saw an event for it (a new live object, even an equal one): planned anew
    assert planned(moved, copy.deepcopy(live), memo, digests.carried()).action \
        is Action.UNCHANGED
    assert stamped == [1]


def test_other_inputs_are_not_reused() -> None:
    memo = PlanMemo()
    live = deployment("web:1", "41")
    change = Change(Action.UNCHANGED, KEY, desired=deployment("web:1", ""), live=live)
    memo.record(change, ("digest-1", False))
    assert memo.reused(KEY, ("digest-1", False), live) is not None
    assert memo.reused(KEY, ("digest-2", False), live) is None  # the desired changed
    assert memo.reused(KEY, ("digest-1", True), live) is None  # a scaler came
    assert memo.reused(KEY, ("digest-1", False), dict(live)) is None  # the watch saw it
    memo.record(Change(Action.UNCHANGED, KEY, desired=change.desired, live=live,
                       restamp=True), ("digest-1", False))
    assert memo.reused(KEY, ("digest-1", False), live) is None  # a record to write first
    memo.record(change, ("digest-1", False))
    memo.keep_only(set())
    assert memo.found == {}
