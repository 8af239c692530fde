"""Failover decisions (pure, fixed clock): when a cluster is lost, where replicas go, how
they move back."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler import failover
from reconciler.failover import LOST, REACHABLE, RETURNING, UNREACHABLE, ClusterState

GRACE = 300.0


def seen(previous: ClusterState | None, *, at: float, error: str | None = None,
         cordoned: bool = False) -> ClusterState:
    return failover.observe(previous, "c", error=error, cordoned=cordoned, now=at, grace=GRACE)


def test_a_slow_cluster_is_only_unreachable_and_a_long_outage_makes_it_lost() -> None:
    state = seen(None, at=1000, error="timed out")
    assert (state.phase, state.unreachable_since) == (UNREACHABLE, 1000)
    state = seen(state, at=1299, error="timed out")
    assert state.phase == UNREACHABLE
    # it answers: the clock starts over, nothing was lost
    state = seen(state, at=1300)
    assert state.phase == REACHABLE and state.unreachable_since is None
    state = seen(state, at=1400, error="connection refused")
    assert seen(state, at=1699, error="connection refused").phase == UNREACHABLE
    lost = seen(state, at=1700, error="connection refused")
    assert lost.phase == LOST and lost.since == 1700
    assert "unreachable for 300s" in lost.reason and "connection refused" in lost.reason


def test_a_lost_cluster_returns_one_step_per_pass_it_answers() -> None:
    lost = ClusterState("c", LOST, "unreachable", since=10.0, unreachable_since=0.0)
    back = seen(lost, at=500)
    assert (back.phase, back.steps, back.since) == (RETURNING, 1, 500)
    assert seen(back, at=510).steps == 2
    # a returning cluster failing again (briefly) keeps its phase and does not step
    flaky = seen(back, at=520, error="timed out")
    assert (flaky.phase, flaky.steps) == (RETURNING, 1)
    assert seen(flaky, at=520 + GRACE, error="timed out").phase == LOST


def test_a_cordon_is_lost_at_once_and_uncordoning_returns() -> None:
    state = seen(None, at=5, cordoned=True)
    assert (state.phase, state.reason) == (LOST, failover.CORDONED)
    assert seen(state, at=6).phase == RETURNING


def test_state_survives_its_json_round_trip() -> None:
    state = ClusterState("c", RETURNING, "answers again", since=1_800_000_000.0,
                         unreachable_since=None, steps=2)
    assert failover.ClusterState.from_json("c", state.to_json()) == state


@pytest.mark.parametrize(("step", "replicas", "want"), [
    ("25%", 8, 2), ("25%", 3, 1), ("25%", 100, 25), ("50%", 5, 2), ("3", 10, 3)])
def test_failback_step_is_at_most_the_share_but_at_least_one(step: str, replicas: int,
                                                            want: int) -> None:
    assert failover.step_of(step, replicas) == want


@pytest.mark.parametrize("bad", ["0", "0%", "-1", "lots", "%"])
def test_bad_failback_steps_are_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        failover.parse_step(bad)


def test_blend_moves_back_in_steps_and_preserves_the_total() -> None:
    normal = {"a": 3, "b": 3, "c": 2}
    moved = {"a": 4, "b": 4}  # c lost: its 2 went to a and b
    seen_counts = []
    for back in range(0, 3):
        counts = failover.blend(normal, moved, ["c"], back)
        assert sum(counts.values()) == 8
        assert counts["c"] == back
        assert all(counts[k] >= normal[k] for k in ("a", "b"))
        seen_counts.append(counts)
    assert seen_counts[-1] == normal
    # a budget beyond the share never overshoots
    assert failover.blend(normal, moved, ["c"], 99) == normal


def test_blend_shrinks_a_cluster_that_only_held_extra_copies() -> None:
    normal = {"a": 2, "b": 2}
    moved = {"a": 2, "c": 2}  # b lost; c (not used normally) took its share
    assert failover.blend(normal, moved, ["b"], 1) == {"a": 2, "b": 1, "c": 1}
    assert failover.blend(normal, moved, ["b"], 2) == {"a": 2, "b": 2, "c": 0}


# --- arrange: whole desired sets ---------------------------------------------------------

def deployment(app: str, replicas: int, kind: str = "PinApp") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": app, "namespace": "shop", "labels": labels(app, kind)},
            "spec": {"replicas": replicas}}


def pod(app: str, failover_on: bool) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": app, "namespace": "shop", "labels": labels(app, "PinPod"),
                         "annotations": {"pincompute.io/failover": str(failover_on).lower()}}}


def quota(hard: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": "shop", "namespace": "shop"}, "spec": {"hard": {"cpu": hard}}}


def labels(app: str, kind: str) -> dict[str, str]:
    return {"pincompute.io/app": app, "pincompute.io/kind": kind,
            "pincompute.io/project": "shop"}


def replicas(desired: dict[str, list[dict[str, Any]]], app: str) -> dict[str, int]:
    return {c: o["spec"]["replicas"] for c, objs in desired.items() for o in objs
            if o["kind"] == "Deployment" and o["metadata"]["name"] == app}


NORMAL = {"a": [quota("4"), deployment("web", 4), pod("nb", True)],
          "b": [quota("4"), deployment("web", 4), pod("keep", False)],
          "c": [quota("4"), deployment("web", 4)]}
#: the placement without c: web's 12 over a and b, quotas grown
MOVED = {"a": [quota("6"), deployment("web", 6), pod("nb", True)],
         "b": [quota("6"), deployment("web", 6), pod("keep", False)]}


def test_nothing_lost_means_the_normal_placement() -> None:
    out = failover.arrange(NORMAL, MOVED, {c: ClusterState(c) for c in "abc"}, "25%")
    assert out.desired == NORMAL and not out.moves


def test_a_lost_cluster_moves_its_replicas_and_quota_to_the_others() -> None:
    states = {"a": ClusterState("a"), "b": ClusterState("b"),
              "c": ClusterState("c", LOST, "unreachable")}
    out = failover.arrange(NORMAL, MOVED, states, "25%")
    assert replicas(out.desired, "web") == {"a": 6, "b": 6}
    assert [o["spec"]["hard"]["cpu"] for o in out.desired["a"] if o["kind"] == "ResourceQuota"
            ] == ["6"]
    move = out.moves[("PinApp", "shop", "web")]
    assert move.phase == "FailedOver" and move.clusters == ["c"]
    assert move.replicas == {"a": 6, "b": 6} and move.normal == {"a": 4, "b": 4, "c": 4}


def test_pinpods_follow_their_failover_flag() -> None:
    # a and b lost: the placement without them puts both pods in c
    moved = {"c": [quota("12"), deployment("web", 12), pod("nb", True), pod("keep", False)]}
    states = {"a": ClusterState("a", LOST, "unreachable"),
              "b": ClusterState("b", LOST, "unreachable"), "c": ClusterState("c")}
    out = failover.arrange(NORMAL, moved, states, "25%")
    names_c = [o["metadata"]["name"] for o in out.desired["c"] if o["kind"] == "Pod"]
    assert names_c == ["nb"]  # failover: true is recreated; failover: false is not
    stranded = out.moves[("PinPod", "shop", "keep")]
    assert stranded.phase == "Stranded" and "failover: false" in stranded.message
    assert out.moves[("PinPod", "shop", "nb")].phase == "FailedOver"


def test_a_returning_cluster_takes_its_share_back_in_steps() -> None:
    history = []
    for steps in (1, 2, 3, 4):
        states = {"a": ClusterState("a"), "b": ClusterState("b"),
                  "c": ClusterState("c", RETURNING, "back", steps=steps)}
        out = failover.arrange(NORMAL, MOVED, states, "25%")  # 25% of 12 = 3 per pass
        counts = replicas(out.desired, "web")
        assert sum(counts.values()) == 12
        history.append((counts.get("c", 0), steps))
        if steps < 2:
            assert out.moves[("PinApp", "shop", "web")].phase == "FailingBack"
            assert "c" in out.pending
    assert [c for c, _ in history] == [3, 4, 4, 4]
    final = failover.arrange(NORMAL, MOVED, {"a": ClusterState("a"), "b": ClusterState("b"),
                                             "c": ClusterState("c", RETURNING, steps=2)},
                             "25%")
    assert replicas(final.desired, "web") == {"a": 4, "b": 4, "c": 4}
    assert not final.pending and not final.moves
    # the returning cluster gets the normal platform objects, the others keep the larger
    # quotas until the apps are back
    assert [o["spec"]["hard"]["cpu"] for o in final.desired["c"]
            if o["kind"] == "ResourceQuota"] == ["4"]


# --- what `pincompile status` shows ------------------------------------------------------

def test_status_table_shows_failover_per_app_and_the_clusters_not_simply_reachable() -> None:
    from reconciler.commands.status import render_table

    rows = [
        {"kind": "PinApp", "project": "shop", "name": "web", "status": {
            "phase": "Healthy", "ready": "12/12", "message": "failing back to c",
            "failover": {"phase": "FailingBack", "failback": {"back": 2, "of": 4}}}},
        {"kind": "PinPod", "project": "shop", "name": "scratch", "status": {
            "phase": "Unknown", "failover": {"phase": "Stranded"}}},
        {"kind": "Cluster", "project": "", "name": "c", "status": {"failover": {
            "phase": "Returning", "since": "2026-11-23T18:00:00Z", "failbackSteps": 1,
            "reason": "answers again: shares move back"}}},
    ]
    lines = render_table(rows).splitlines()
    assert lines[0].split()[:6] == ["APP", "PHASE", "READY", "CLUSTERS", "ROLLOUT", "FAILOVER"]
    assert "FailingBack 2/4" in lines[1] and "Stranded" in lines[2]
    assert lines[4].split() == ["CLUSTER", "FAILOVER", "SINCE", "REASON"]
    assert lines[5].startswith("c ") and "Returning (step 1)" in lines[5]
    assert "answers again" in lines[5]
    # nothing lost: no cluster section at all
    assert len(render_table(rows[:1]).splitlines()) == 2


def test_an_app_its_hpa_scales_moves_with_its_bounds_and_comes_back_in_one_step() -> None:
    def hpa(low: int, high: int) -> dict[str, Any]:
        return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                "metadata": {"name": "api", "namespace": "shop",
                             "labels": labels("api", "PinScaler")},
                "spec": {"minReplicas": low, "maxReplicas": high,
                         "scaleTargetRef": {"kind": "Deployment", "name": "api"}}}

    def scaled(low: int, high: int) -> list[dict[str, Any]]:
        return [{**deployment("api", 0), "spec": {}}, hpa(low, high)]

    normal = {c: scaled(1, 3) for c in "abc"}
    moved = {"a": scaled(2, 5), "b": scaled(1, 4)}  # the scaler's 3..9 without c
    lost = {"a": ClusterState("a"), "b": ClusterState("b"),
            "c": ClusterState("c", LOST, "unreachable")}
    out = failover.arrange(normal, moved, lost, "25%")
    bounds = {c: [(o["spec"]["minReplicas"], o["spec"]["maxReplicas"]) for o in objs
                  if o["kind"] == "HorizontalPodAutoscaler"] for c, objs in out.desired.items()}
    assert bounds == {"a": [(2, 5)], "b": [(1, 4)], "c": []}
    assert out.moves[("PinScaler", "shop", "api")].phase == "FailedOver"
    back = failover.arrange(normal, moved, {**lost, "c": ClusterState("c", RETURNING,
                                                                      steps=1)}, "25%")
    assert back.desired == {c: normal[c] for c in "abc"} and not back.pending


# --- a scaled app keeps its replicas: the survivors' floors hold the lost cluster's -------

def test_the_survivors_floors_take_over_the_lost_clusters_replicas() -> None:
    # 9 replicas, 3 per cluster; c lost: its 3 go to a (2) and b (1), the total holds
    held = failover.hold_capacity({"c": 3}, {"a": 3, "b": 3}, {"a": (2, 9), "b": (1, 9)},
                                  None)
    assert held is not None
    assert held.floors == {"a": 5, "b": 4} and held.carried == {"c": 3}
    assert held.total == 9


def test_a_floor_is_never_below_the_hpas_own_minimum() -> None:
    # api: 1 replica each, min 3 divided 2+1 over the survivors: still 3 in all, not 4
    held = failover.hold_capacity({"c": 1}, {"a": 1, "b": 1}, {"a": (2, 5), "b": (1, 4)},
                                  None)
    assert held is not None and held.floors == {"a": 2, "b": 1}
    held = failover.hold_capacity({"c": 1}, {"a": 1, "b": 1}, {"a": (1, 4), "b": (2, 5)},
                                  None)
    assert held is not None and held.floors == {"a": 1, "b": 2}


def test_floors_stay_while_the_same_clusters_are_lost_although_the_survivors_grew() -> None:
    first = failover.hold_capacity({"c": 3}, {"a": 3, "b": 3}, {"a": (2, 9), "b": (1, 9)},
                                   None)
    again = failover.hold_capacity({"c": None}, {"a": 5, "b": 4},
                                   {"a": (2, 9), "b": (1, 9)}, first)
    assert again == first


def test_a_second_lost_cluster_adds_its_replicas_to_the_last_survivor() -> None:
    first = failover.hold_capacity({"c": 3}, {"a": 3, "b": 3}, {"a": (2, 9), "b": (1, 9)},
                                   None)
    both = failover.hold_capacity({"b": 4, "c": None}, {"a": 5}, {"a": (3, 18)}, first)
    assert both is not None
    assert both.carried == {"b": 4, "c": 3} and both.floors == {"a": 9}


def test_floors_add_up_to_at_most_the_survivors_maxima() -> None:
    held = failover.hold_capacity({"c": 8}, {"a": 6, "b": 6}, {"a": (1, 8), "b": (1, 8)},
                                  None)
    assert held is not None and held.floors == {"a": 8, "b": 8}


def test_a_lost_cluster_never_read_and_no_survivor_hold_nothing() -> None:
    assert failover.hold_capacity({}, {"a": 3}, {"a": (1, 6)}, None) is None
    assert failover.hold_capacity({"c": 3}, {}, {}, None) is None
    held = failover.hold_capacity({"c": None}, {"a": 3}, {"a": (1, 6)}, None)
    assert held is not None and held.floors == {"a": 3}


def test_capacity_survives_its_json_round_trip_and_bad_json_is_none() -> None:
    held = failover.Capacity({"c": 3}, {"a": 5, "b": 4})
    assert failover.Capacity.from_json(held.to_json()) == held
    assert failover.Capacity.from_json({"carried": {"c": "x"}}) is None
    assert failover.Capacity.from_json("nonsense") is None


def test_with_floor_raises_min_and_max_only_when_needed() -> None:
    hpa = {"kind": "HorizontalPodAutoscaler", "spec": {"minReplicas": 2, "maxReplicas": 4}}
    assert failover.with_floor(hpa, 1) is hpa
    assert failover.with_floor(hpa, 3)["spec"] == {"minReplicas": 3, "maxReplicas": 4}
    assert failover.with_floor(hpa, 6)["spec"] == {"minReplicas": 6, "maxReplicas": 6}
    assert hpa["spec"] == {"minReplicas": 2, "maxReplicas": 4}
