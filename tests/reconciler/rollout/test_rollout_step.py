"""The rollout step: a new template goes to the first zone, later zones keep the live one;
a cluster without the Deployment gets it, and a halt leaves the held clusters
unconverged; through whole passes on clusters held in memory (their controllers roll a
Deployment out at once, or never for an image they are told never becomes ready): zone
after zone, a halt kept by a restarted reconciler, a fixed image from the first zone
again. The rollout over real controllers, watched, is in ``test_reconcile_e2e.py``."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from pincompile.compiler import compile_path
from reconciler.desired import MemberState
from reconciler.model import ClusterReport, Left
from reconciler.rollout import HALTED, STRATEGY_ANNOTATION, ZONE_BY_ZONE, stamp
from reconciler.rollout.step import hold_zones, report_halts
from tests.support.fake_passes import (
    ZONE,
    FakePass,
    clusters_running,
    edit,
    fake_fleet,
    live,
    set_image,
    spec_repo,
)
from tests.support.kube_controllers import Controllers

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


# --- whole passes ------------------------------------------------------------------------------

def web_image(fleet: Any, cluster: str) -> str:
    return image(live(fleet, cluster, "Deployment", "web") or {})


def test_a_new_image_goes_zone_by_zone_each_zone_only_after_the_one_before_rolled_out(
        tmp_path: Path) -> None:
    repo = spec_repo(tmp_path / "repo")
    fleet = fake_fleet(compile_path(repo))
    FakePass(fleet, repo)
    order = sorted(clusters_running(fleet, "web"), key=ZONE.__getitem__)
    assert len(order) == 3
    edit(repo, "apps/shop/web.yaml", set_image("registry.internal/shop/web:1.1.0"), "web 1.1")
    promoted: list[tuple[str, list[str]]] = []

    def check_gate(line: str) -> None:  # at each promotion, the zones before are done
        if ": rollout web (zone " in line:
            cluster = line.split(":", 1)[0]
            earlier = [c for c in order if ZONE[c] < ZONE[cluster]]
            for c in earlier:
                done = live(fleet, c, "Deployment", "web") or {}
                assert image(done).endswith("web:1.1.0")
                assert done["status"]["observedGeneration"] == done["metadata"]["generation"]
                assert done["status"]["availableReplicas"] == done["spec"]["replicas"]
            promoted.append((cluster, earlier))

    run = FakePass(fleet, repo, echo=check_gate)
    assert [cluster for cluster, _ in promoted] == order[1:], run.lines
    assert all(web_image(fleet, c).endswith("web:1.1.0") for c in order)
    assert run.statuses["PinApp/shop/web"]["rollout"]["phase"] == "Complete"
    host = fleet.clusters["host"]
    reasons = {o["reason"] for k, o in host.objects.items() if k[0] == "Event"
               and o["involvedObject"]["name"] == "web"}
    assert {"ZonePromoted", "RolloutComplete"} <= reasons


def test_a_bad_image_halts_after_the_first_zone_the_halt_holds_and_a_fix_starts_over(
        tmp_path: Path) -> None:
    repo = spec_repo(tmp_path / "repo")
    edit(repo, "apps/shop/web.yaml", lambda docs: docs[0]["spec"]["rollout"].update(
        healthTimeout="1s"), "web: quick to halt")
    controllers = Controllers(never_ready={":1.2.0-never-ready"})
    fleet = fake_fleet(compile_path(repo), controllers)
    FakePass(fleet, repo)
    order = sorted(clusters_running(fleet, "web"), key=ZONE.__getitem__)
    edit(repo, "apps/shop/web.yaml", set_image("registry.internal/shop/web:1.2.0-never-ready"),
         "web 1.2 (broken)")
    halted = FakePass(fleet, repo)
    web = halted.statuses["PinApp/shop/web"]
    assert web["phase"] == "Degraded" and "rollout halted" in web["message"], web
    assert web["rollout"]["phase"] == "Halted" and web["rollout"]["zone"] == ZONE[order[0]]
    assert web_image(fleet, order[0]).endswith("1.2.0-never-ready")
    assert all(web_image(fleet, c).endswith("web:1.0.0") for c in order[1:])
    host = fleet.clusters["host"]
    assert "RolloutHalted" in {o["reason"] for k, o in host.objects.items() if k[0] == "Event"}
    assert halted.report.converged is False

    again = FakePass(fleet, repo)  # a new reconciler: the state comes from the host
    assert again.statuses["PinApp/shop/web"]["rollout"]["phase"] == "Halted"
    assert all(again.writes[c] == 0 for c in order[1:]), again.lines
    assert all(web_image(fleet, c).endswith("web:1.0.0") for c in order[1:])

    edit(repo, "apps/shop/web.yaml", set_image("registry.internal/shop/web:1.3.0"), "fix")
    fixed = FakePass(fleet, repo)
    assert fixed.statuses["PinApp/shop/web"]["rollout"]["phase"] == "Complete", fixed.lines
    assert fixed.statuses["PinApp/shop/web"]["phase"] == "Healthy"
    assert all(web_image(fleet, c).endswith("web:1.3.0") for c in order)
