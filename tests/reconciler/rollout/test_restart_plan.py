"""Which objects a restart patches, in which order, with what; and its zone gate: the next
zone starts only once the zone before has rolled out, a zone that does not halts it, and
a pause stops it before the next zone."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from reconciler.rollout import HEALTH_TIMEOUT_ANNOTATION
from reconciler.rollout.restart import (
    RESTARTED_AT_ANNOTATION,
    STALE_SECONDS,
    Claim,
    Workload,
    claim_of,
    claim_patch,
    plan_restart,
    release_patch,
    restart_patch,
    restarted,
    run_restart,
    stale,
    why_not_restartable,
)

APP = ("PinApp", "shop", "web")
AT = "2026-11-26T12:00:00Z"


def obj(kind: str, name: str = "web", **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": kind,
            "metadata": {"name": name, "namespace": "shop", **meta}}


def test_only_template_workloads_restart_zone_by_zone_in_zone_order() -> None:
    found = {"b": [obj("Deployment"), obj("Service"), obj("PodDisruptionBudget")],
             "a": [obj("Deployment", annotations={HEALTH_TIMEOUT_ANNOTATION: "90s"})],
             "a2": [obj("Deployment")], "c": [obj("ConfigMap")]}
    plan = plan_restart(APP, found, {"a": "z1", "a2": "z1", "b": "z2", "c": "z3"}, AT)
    assert [(z, [str(w) for w in ws]) for z, ws in plan.zones] == [
        ("z1", ["a: Deployment/shop/web", "a2: Deployment/shop/web"]),
        ("z2", ["b: Deployment/shop/web"])]
    assert plan.timeout == 600.0  # the longest: a2 and b carry no timeout (10m default)


def test_the_patch_sets_only_the_template_annotation() -> None:
    patch = restart_patch(Workload("a", "z1", "DaemonSet", "shop", "db"), AT)
    assert patch == {"apiVersion": "apps/v1", "kind": "DaemonSet",
                     "metadata": {"name": "db", "namespace": "shop"},
                     "spec": {"template": {"metadata": {"annotations": {
                         RESTARTED_AT_ANNOTATION: AT}}}}}


def test_kind_checks_name_what_to_do_instead() -> None:
    assert why_not_restartable("PinApp") is None
    assert why_not_restartable("PinterestDaemon") is None
    assert "rerun" in str(why_not_restartable("PinterestJobSet"))
    assert "restart-container" in str(why_not_restartable("PinPod"))


def live(kind: str, at: str, *, generation: int = 2, observed: int = 2, updated: int = 2,
         available: int = 2) -> dict[str, Any]:
    status = {"observedGeneration": observed}
    if kind == "DaemonSet":
        status |= {"desiredNumberScheduled": 2, "updatedNumberScheduled": updated,
                   "numberAvailable": available}
    else:
        status |= {"replicas": updated, "updatedReplicas": updated,
                   "availableReplicas": available}
    return {"kind": kind, "metadata": {"name": "web", "generation": generation},
            "spec": {"replicas": 2, "template": {"metadata": {"annotations": {
                RESTARTED_AT_ANNOTATION: at}}}}, "status": status}


def test_a_workload_is_restarted_once_its_pods_rolled_with_this_restarts_annotation() -> None:
    for kind in ("Deployment", "DaemonSet"):
        assert restarted(live(kind, AT), AT) == (True, ""), kind
        assert not restarted(live(kind, AT, observed=1), AT)[0], kind
        assert restarted(live(kind, AT, updated=1), AT)[1] == "1/2 pods updated", kind
        assert not restarted(live(kind, AT, available=1), AT)[0], kind
        assert not restarted(live(kind, "earlier"), AT)[0], kind
    assert restarted(None, AT) == (False, "it is gone")


def run(plan_zones: dict[str, str], ready: set[str], paused_after: int | None = None,
        lost_after: int | None = None) -> tuple[list[str], list[str], str]:
    found = {c: [obj("Deployment")] for c in plan_zones}
    plan = plan_restart(APP, found, plan_zones, AT)
    applied: list[str] = []
    reasons: list[str] = []
    now = [0.0]

    def fetch(w: Workload) -> dict[str, Any]:
        return live("Deployment", AT if w.cluster in ready and w.cluster in applied else "x")

    def sleep(seconds: float) -> None:
        now[0] += seconds

    outcome = run_restart(plan, apply=lambda w, _b: applied.append(w.cluster), fetch=fetch,
                          record=lambda r, _m: reasons.append(r),
                          paused=lambda: "bob" if paused_after is not None
                          and len(applied) >= paused_after else None,
                          claimed=lambda: lost_after is None or len(applied) < lost_after,
                          clock=lambda: now[0], sleep=sleep, poll=30.0)
    return applied, reasons, outcome.stopped


def test_each_zone_waits_for_the_one_before_and_a_zone_that_does_not_roll_halts_it() -> None:
    zones = {"a": "z1", "b": "z2", "c": "z3"}
    applied, reasons, stopped = run(zones, {"a", "b", "c"})
    assert applied == ["a", "b", "c"] and stopped == ""
    assert reasons == ["RestartZone"] * 3 + ["RestartComplete"]
    applied, reasons, stopped = run(zones, {"a"})
    assert applied == ["a", "b"] and reasons[-1] == "RestartHalted"
    assert "zone z2 did not roll out within 600s" in stopped


def test_a_pause_stops_the_restart_before_its_next_zone() -> None:
    applied, reasons, stopped = run({"a": "z1", "b": "z2"}, {"a", "b"}, paused_after=1)
    assert applied == ["a"] and reasons == ["RestartZone", "RestartPaused"]
    assert "paused by bob" in stopped


def test_a_restart_taken_over_by_another_server_stops_here_and_records_nothing() -> None:
    applied, reasons, stopped = run({"a": "z1", "b": "z2"}, set(), lost_after=1)
    assert applied == ["a"] and reasons == ["RestartZone"]
    assert stopped == "another server took this restart over"


def test_a_claim_reads_back_from_its_annotations_and_ages_from_its_renewal() -> None:
    ref = {"apiVersion": "pincompute.io/v1", "kind": "PinApp",
           "metadata": {"name": "web", "namespace": "shop"}}
    claim = Claim(AT, "dana", "serve-0/7", "2026-11-26T12:00:10Z")
    body = claim_patch(ref, claim, "42")
    assert body["metadata"]["resourceVersion"] == "42"  # taken only if still at it
    assert claim_of(body) == claim and claim_of(ref) is None
    assert "resourceVersion" not in claim_patch(ref, claim)["metadata"]
    assert "annotations" not in release_patch(ref)["metadata"]
    renewed = datetime(2026, 11, 26, 12, 0, 10, tzinfo=UTC).timestamp()
    assert claim.age(renewed + 30) == 30 and not stale(claim, renewed + STALE_SECONDS)
    assert stale(claim, renewed + STALE_SECONDS + 1)
    assert stale(Claim(AT, "dana", "serve-0/7", "not a time"), renewed)
