"""The rollout step's pure half: a new template goes to the first zone, later zones keep
the live one; a cluster without the Deployment gets it, and a halt leaves the held
clusters unconverged."""

from __future__ import annotations

import copy
from typing import Any

from reconciler.desired import MemberState
from reconciler.model import ClusterReport, Left
from reconciler.rollout import HALTED, STRATEGY_ANNOTATION, ZONE_BY_ZONE, stamp
from reconciler.rollout.step import hold_zones, report_halts

APP = ("PinApp", "shop", "web")


def deployment(image: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {
        "name": "web", "namespace": "shop",
        "annotations": {STRATEGY_ANNOTATION: ZONE_BY_ZONE},
        "labels": {"pincompute.io/project": "shop", "pincompute.io/app": "web",
                   "pincompute.io/kind": "PinApp"}},
        "spec": {"template": {"spec": {"containers": [{"name": "main", "image": image}]}}}}


def image(obj: dict[str, Any]) -> str:
    return str(obj["spec"]["template"]["spec"]["containers"][0]["image"])


def members(live: dict[str, str | None]) -> dict[str, MemberState]:
    out = {}
    for cluster, zone in (("a", "z1"), ("b", "z2"), ("c", "z3")):
        member = MemberState(cluster, cluster, zone, [deployment("web:2")])
        if live.get(cluster) is not None:
            member.live[("Deployment", "shop", "web")] = stamp(deployment(str(live[cluster])))
        out[cluster] = member
    return out


def test_a_new_template_goes_to_the_first_zone_and_later_zones_keep_the_live_one() -> None:
    found = members({"a": "web:1", "b": "web:1", "c": None})
    rollouts = hold_zones(found, {}, "rev2")
    assert set(rollouts) == {APP} and rollouts[APP].started_new
    assert [image(found[c].desired[0]) for c in "abc"] == ["web:2", "web:1", "web:2"]


def test_a_first_deployment_has_no_gates() -> None:
    found = members({})
    rollouts = hold_zones(found, {}, "rev1")
    assert rollouts[APP].state.phase == "Complete"
    assert [image(found[c].desired[0]) for c in "abc"] == ["web:2"] * 3


def test_a_failed_member_takes_no_part_and_a_halt_leaves_the_held_unconverged() -> None:
    found = members({"a": "web:1", "b": "web:1", "c": "web:1"})
    found["c"].error = "connection refused"
    before = copy.deepcopy(found["c"].desired)
    rollouts = hold_zones(found, {}, "rev2")
    assert set(rollouts[APP].desired) == {"a", "b"} and found["c"].desired == before
    rollouts[APP].state.phase, rollouts[APP].state.message = HALTED, "zone z1 timed out"
    reports = {c: ClusterReport(c) for c in found}
    for cluster, member in found.items():
        member.report = reports[cluster]
    report_halts(rollouts, found)
    assert [u.left for u in reports["b"].unconverged] == [Left.ROLLOUT_HALTED]
    assert reports["a"].unconverged == [] and reports["c"].unconverged == []
