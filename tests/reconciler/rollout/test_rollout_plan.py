"""Rollout decisions and gates: zones in order, promotion only when rolled out."""

from __future__ import annotations

from typing import Any

from reconciler import rollout
from tests.support.deployments import deploy, live_of

ZONES = {"a1": "za", "b1": "zb", "c1": "zc"}
APP = ("PinApp", "shop", "web")


def test_a_new_template_starts_at_the_first_zone_and_holds_the_rest() -> None:
    old = {c: live_of(deploy("web:1")) for c in ZONES}
    plan = rollout.begin(APP, {c: deploy("web:2") for c in ZONES}, ZONES, old, None, "r2")
    assert plan.started_new and plan.state.zone == 0 and plan.state.zones == ["za", "zb", "zc"]
    assert [c for c in ZONES if plan.allowed(c)] == ["a1"]
    held = rollout.hold(plan.desired["b1"], old["b1"])
    assert held["spec"]["template"] == old["b1"]["spec"]["template"]
    # the same target continues from the stored state, a halted one stays halted
    stored = rollout.State(plan.state.target, "r2", plan.state.zones, zone=1,
                           phase=rollout.HALTED)
    again = rollout.begin(APP, {c: deploy("web:2") for c in ZONES}, ZONES, old, stored, "r3")
    assert not again.started_new and again.state.phase == rollout.HALTED
    assert [c for c in ZONES if again.allowed(c)] == ["a1", "b1"]
    # a first deployment, or no template change, has no gates
    fresh = rollout.begin(APP, {c: deploy("web:1") for c in ZONES}, ZONES,
                          {c: None for c in ZONES}, None, "r1")
    assert fresh.state.phase == rollout.COMPLETE and all(fresh.allowed(c) for c in ZONES)


def test_zones_are_promoted_only_when_the_previous_is_rolled_out_and_halt_on_timeout() -> None:
    old = {c: live_of(deploy("web:1")) for c in ZONES}
    plan = rollout.begin(APP, {c: deploy("web:2") for c in ZONES}, ZONES, old, None, "r2")
    live = {"a1": live_of(plan.desired["a1"]), "b1": old["b1"], "c1": old["c1"]}
    applied, events = [], []
    clock = [1000.0]
    plan.state.since = clock[0]

    def apply(cluster: str, obj: dict[str, Any]) -> None:
        applied.append(cluster)
        # zone b's new pods never become available
        live[cluster] = live_of(obj, ready=cluster != "b1", generation=2)

    def sleep(seconds: float) -> None:
        clock[0] += seconds

    state = rollout.advance(plan, apply=apply, fetch=lambda c, _o: live[c],
                            record=lambda r, m: events.append(r), save=lambda s: None,
                            clock=lambda: clock[0], sleep=sleep)
    assert applied == ["b1"]
    assert state.phase == rollout.HALTED and state.zones[state.zone] == "zb"
    assert "0/2 updated pods available" in state.message
    assert events == ["ZonePromoted", "RolloutHalted"]
    assert clock[0] - 1000.0 >= 30  # waited the zone's health timeout, no longer


def test_rolled_out_needs_the_generation_observed_and_every_pod_updated() -> None:
    obj = live_of(deploy("web:2"))
    assert rollout.rolled_out(obj) == (True, "")
    obj["metadata"]["generation"] = 2
    assert rollout.rolled_out(obj)[1] == "the new generation is not observed yet"
    obj = live_of(deploy("web:2"))
    obj["status"]["replicas"] = 3
    assert "old pods still running" in rollout.rolled_out(obj)[1]
