"""The plan memo of a long-running reconciler: which objects may skip their dry-run."""

from __future__ import annotations

import copy

from reconciler.sync import Action, Change, PlanMemo


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
