"""A stale record: an object a dry-run found unchanged is applied once more, only to record
it, when that lets the next pass skip its dry-run — and never when it would not."""

from __future__ import annotations

import copy
from typing import Any

from reconciler.plan import applied
from reconciler.plan.change import Action, Change
from reconciler.plan.cluster_plan import ClusterPlan
from reconciler.rollout.restart import RESTARTED_AT_ANNOTATION as RESTARTED_AT
from reconciler.rollout.step import gated, hold_zones
from tests.reconciler.plan.test_applied_record import desired, live_after_apply
from tests.reconciler.rollout.test_rollout_step import members

KEY = ("Deployment", "shop", "web")


def autoscaled(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as a pass applies it once its app has a PinScaler: no replicas, recorded
    without them."""
    spec = {k: v for k, v in obj["spec"].items() if k != "replicas"}
    return applied.stamp({**obj, "spec": spec}, {**obj, "spec": spec})


def dry_run(obj: dict[str, Any], live: dict[str, Any]) -> dict[str, Any]:
    """The server's answer to applying ``obj`` over ``live``: live with our record."""
    out = copy.deepcopy(live)
    out["metadata"]["annotations"][applied.ANNOTATION] = applied.recorded(obj)
    return out


def test_a_scaler_added_alone_makes_the_record_stale_until_applied_once() -> None:
    before = desired()
    before["spec"]["replicas"] = 2
    live = live_after_apply(applied.stamp(before))
    now = autoscaled(before)
    assert not applied.unchanged(now, live)  # the record no longer answers: a dry-run
    predicted = dry_run(now, live)
    assert applied.stale(now, live, predicted)
    # applied once, the record answers: nothing more to do, and no dry-run next time
    assert applied.unchanged(now, predicted)
    assert not applied.stale(now, predicted, dry_run(now, predicted))


def test_an_object_without_a_record_is_recorded_once() -> None:
    live = live_after_apply(desired())  # applied by a pincompile without the record
    now = applied.stamp(desired())
    assert applied.stale(now, live, dry_run(now, live))


def test_a_current_record_is_not_stale() -> None:
    now = applied.stamp(desired())
    live = live_after_apply(now)
    assert not applied.stale(now, live, dry_run(now, live))
    # another commit that leaves the object alone: the record is the same
    assert not applied.stale(applied.stamp(desired(revision="b")), live, live)


def test_no_write_when_the_record_would_not_answer_after_it() -> None:
    """A quantity the server holds in another form, or a list it lengthens: the next pass
    would dry-run the object anyway, so applying it again buys nothing."""
    def with_cpu(obj: dict[str, Any], cpu: str) -> dict[str, Any]:
        obj["spec"]["template"]["spec"]["containers"][0]["resources"] = {
            "requests": {"cpu": cpu}}
        return obj

    now = applied.stamp(with_cpu(desired(), "0.5"))
    live = with_cpu(live_after_apply(desired()), "500m")
    assert not applied.stale(now, live, dry_run(now, live))
    now = applied.stamp(desired())
    live = live_after_apply(desired())
    live["spec"]["template"]["spec"]["containers"].append({"name": "token"})
    assert not applied.stale(now, live, dry_run(now, live))
    # the same objects as the server would hold them: recorded once
    assert applied.stale(now, live_after_apply(desired()),
                         dry_run(now, live_after_apply(desired())))


def test_only_unchanged_objects_are_restamped_and_a_restamp_is_not_pending() -> None:
    key = ("Deployment", "shop", "web")
    plan = ClusterPlan("a", changes=[
        Change(Action.UNCHANGED, key, restamp=True),
        Change(Action.UNCHANGED, ("Service", "shop", "web")),
        Change(Action.UPDATE, ("Deployment", "shop", "api"), restamp=True)])
    assert [c.key for c in plan.restamps] == [key]
    assert [c.action for c in plan.pending] == [Action.UPDATE]


def test_a_zone_a_rollout_gate_holds_is_never_restamped() -> None:
    """A later zone waiting on its rollout keeps its live template — with a restart's
    annotation another manager owns — so its record is not the one it had: stale, yet
    applying it would share that manager's field and move the Deployment's generation
    (its annotations count), making the held zone look progressing. Only the zone the
    rollout reached is re-recorded."""
    found = members({"a": "web:1", "b": "web:1", "c": "web:1"})
    for member in found.values():
        obj = member.live[KEY]
        obj["spec"]["template"]["metadata"] = {"annotations": {RESTARTED_AT: "2026-11-27"}}
        obj["metadata"]["annotations"][applied.ANNOTATION] = "recorded-by-an-older-pass"
    rollouts = hold_zones(found, {}, "rev2")
    gated_by_cluster = gated(rollouts, found)
    assert gated_by_cluster == {"b": {KEY}, "c": {KEY}}
    for cluster, member in found.items():
        to_apply, live = applied.stamp(member.desired[0]), member.live[KEY]
        predicted = dry_run(to_apply, live)
        if cluster != "a":  # what a dry-run of the held template answers: unchanged
            assert applied.stale(to_apply, live, predicted)
        plan = ClusterPlan(cluster, changes=[Change(
            Action.UNCHANGED, KEY, desired=to_apply, live=live, predicted=predicted,
            restamp=True)], gated=frozenset(gated_by_cluster.get(cluster, ())))
        assert [c.key for c in plan.restamps] == ([KEY] if cluster == "a" else [])
