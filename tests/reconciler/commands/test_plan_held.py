"""`plan` says what a zone-by-zone rollout holds: a later zone's Deployments keep their
live template this pass (no change of their own), and the plan names them per cluster
and per zone with what they wait for (the zone before healthy, a resume, a new template
after a halt); `--exit-code` counts them."""

from __future__ import annotations

from reconciler.commands.held import held_changes, held_summary
from reconciler.rollout.step import hold_zones
from tests.reconciler.rollout.test_rollout_step import members

ALL = lambda _obj: True  # noqa: E731


def test_the_later_zones_changes_are_held_until_the_zone_before_is_healthy() -> None:
    found = members({"a": "web:1", "b": "web:1", "c": "web:1"})
    held = held_changes(hold_zones(found, {}, "rev2"), found, ALL)
    assert {c: [(h.object, h.zone, h.until) for h in items] for c, items in held.items()} == {
        "b": [("Deployment/shop/web", "z2", "z1 is healthy")],
        "c": [("Deployment/shop/web", "z3", "z2 is healthy")]}
    assert held_summary(held) == ["z2: 1 change held until z1 is healthy",
                                  "z3: 1 change held until z2 is healthy"]


def test_nothing_is_held_once_complete_or_where_nothing_changes() -> None:
    fresh = members({})
    assert held_changes(hold_zones(fresh, {}, "rev1"), fresh, ALL) == {}
    same = members({"a": "web:2", "b": "web:2", "c": "web:2"})
    assert held_changes(hold_zones(same, {}, "rev2"), same, ALL) == {}
    found = members({"a": "web:1", "b": "web:1", "c": "web:1"})
    assert held_changes(hold_zones(found, {}, "rev2"), found, lambda _obj: False) == {}


def test_a_paused_rollout_holds_until_it_is_resumed() -> None:
    found = members({"a": "web:1", "b": "web:1", "c": "web:1"})
    rollouts = hold_zones(found, {}, "rev2", {("PinApp", "shop", "web"): "ana"})
    held = held_changes(rollouts, found, ALL)
    assert held["b"][0].until == "`pincompile rollout resume` (paused by ana)"


def test_the_plan_names_each_held_change_under_its_cluster_and_sums_them_per_zone() -> None:
    from reconciler.commands.plan import _as_json, _as_text
    from reconciler.plan.cluster_plan import ClusterPlan

    found = members({"a": "web:1", "b": "web:1", "c": "web:1"})
    held = held_changes(hold_zones(found, {}, "rev2"), found, ALL)
    for member in found.values():
        member.plan = ClusterPlan(member.name)
    text = _as_text(found, held, markdown=False)
    assert "=== b (0 to change, 1 held, 0 unchanged)" in text
    assert "  held      Deployment/shop/web  (until z1 is healthy)" in text
    assert text.splitlines()[-3:] == ["z2: 1 change held until z1 is healthy",
                                      "z3: 1 change held until z2 is healthy",
                                      "no changes now; 2 held by rollout gates until their "
                                      "zone's turn"]
    entry = next(e for e in _as_json(found, held) if e["cluster"] == "c")
    assert entry["held"] == [{"object": "Deployment/shop/web", "zone": "z3",
                              "until": "z2 is healthy"}]
