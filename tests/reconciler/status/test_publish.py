"""What a pass publishes: status documents counted against what failover holds, Events
per kind of write, the health of objects the plan could not apply (pure)."""

from __future__ import annotations

from typing import Any

from reconciler.desired import MemberState
from reconciler.plan.change import Action, Change
from reconciler.plan.cluster_plan import ClusterPlan
from reconciler.status.publish import count_floor_total, events, pending_by_app, unapplied

CART = ("PinApp", "shop", "cart")


def doc(ready: int, desired: int, phase: str = "Healthy") -> dict[str, Any]:
    return {"phase": phase, "ready": f"{ready}/{desired}", "replicas": desired,
            "readyReplicas": ready, "message": "",
            "conditions": [{"type": "Ready", "status": "True", "reason": phase}]}


def test_a_held_app_counts_against_the_replicas_held_and_is_progressing_below() -> None:
    short = doc(6, 6)
    count_floor_total(short, 9)
    assert (short["ready"], short["replicas"], short["phase"]) == ("6/9", 9, "Progressing")
    assert short["conditions"][0]["status"] == "False"
    assert "6 of its 9 replicas ready" in short["message"]
    full = doc(9, 9)
    count_floor_total(full, 9)
    assert full == doc(9, 9)
    grown = doc(10, 10)  # the HPAs went past the floors: their count stands
    count_floor_total(grown, 9)
    assert grown == doc(10, 10)
    degraded = doc(5, 6, "Degraded")
    count_floor_total(degraded, 9)
    assert (degraded["ready"], degraded["phase"]) == ("5/9", "Degraded")


def deployment(name: str, app: str = "cart") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {
        "name": name, "namespace": "shop", "labels": {
            "pincompute.io/project": "shop", "pincompute.io/app": app,
            "pincompute.io/kind": "PinApp"}}, "spec": {}}


def member(name: str, *changes: Change) -> MemberState:
    out = MemberState(name, name, "z")
    out.plan = ClusterPlan(name, list(changes))
    return out


def change(action: Action, obj: dict[str, Any], reason: str = "") -> Change:
    key = (obj["kind"], obj["metadata"]["namespace"], obj["metadata"]["name"])
    return Change(action, key, desired=obj, reason=reason)


def test_one_event_per_kind_of_write_for_the_app_at_most_eight_lines() -> None:
    many = [change(Action.CREATE, deployment(f"d{i}")) for i in range(10)]
    members = {"a": member("a", *many, change(Action.UNCHANGED, deployment("same"))),
               "b": member("b", change(Action.REPLACE, deployment("r")),
                           change(Action.CREATE, deployment("other", app="web")))}
    writes = pending_by_app(members)
    found = dict(events(writes[CART], "abc"))
    assert set(found) == {"Applied", "Replaced"}
    assert found["Applied"].startswith("revision abc: a: create Deployment/shop/d0")
    assert found["Applied"].endswith("(+2 more)")
    assert found["Replaced"] == "revision abc: b: replace Deployment/shop/r"
    assert ("PinApp", "shop", "none") not in writes and events([], "abc") == []


def test_conflicts_and_rejections_show_as_degraded_objects() -> None:
    m = member("a", change(Action.CONFLICT, deployment("x"), "held by kubectl"),
               change(Action.INVALID, deployment("y"), "bad"),
               change(Action.CREATE, deployment("z")))
    found = unapplied(m)
    assert {k[2]: (str(h.phase), h.message) for k, h in found.items()} == {
        "x": ("Degraded", "conflict: held by kubectl"), "y": ("Degraded", "rejected: bad")}
    assert unapplied(MemberState("b", "b", "z")) == {}
