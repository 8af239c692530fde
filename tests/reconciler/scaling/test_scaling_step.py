"""What a PinScaler's status says of its HPAs: the floor now and the target's replicas per
cluster, kept for a cluster that fails; and, through passes on clusters held in memory,
a scaling window raising every cluster's floor by its share while it is open."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pincompile.compiler import compile_path
from reconciler.desired import MemberState
from reconciler.scaling.step import floor_status, hpas_by_app, replicas_seen
from tests.support.fake_passes import (
    MONDAY_10_LA,
    FakePass,
    clusters_running,
    fake_fleet,
    live,
    spec_repo,
)

SCALER = ("PinScaler", "shop", "cart")


def hpa(low: int) -> dict[str, Any]:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {
        "name": "cart", "namespace": "shop", "labels": {
            "pincompute.io/project": "shop", "pincompute.io/app": "cart",
            "pincompute.io/kind": "PinScaler"}},
        "spec": {"minReplicas": low, "maxReplicas": 6, "scaleTargetRef": {
            "apiVersion": "apps/v1", "kind": "Deployment", "name": "cart"}}}


def member(name: str, low: int, replicas: int | None, error: str | None = None
           ) -> MemberState:
    out = MemberState(name, name, "z", [hpa(low)], error=error)
    if replicas is not None:
        out.live[("Deployment", "shop", "cart")] = {"kind": "Deployment",
                                                    "spec": {"replicas": replicas}}
    return out


def test_the_floor_is_the_sum_of_the_hpas_minima() -> None:
    members = {"a": member("a", 2, 3), "b": member("b", 1, 3)}
    hpas = hpas_by_app(members)
    assert floor_status(hpas[SCALER], datetime(2026, 11, 22, tzinfo=UTC)) == {"floor": 3}
    assert ("PinScaler", "shop", "x") not in hpas and floor_status([], datetime.now(UTC)) == {
        "floor": 0}


def test_replicas_seen_keep_a_failing_clusters_last_count() -> None:
    members = {"a": member("a", 1, 5), "b": member("b", 1, 4),
               "c": member("c", 1, None, error="connection refused")}
    previous = {"clusterReplicas": {"a": 3, "b": 3, "c": 3, "gone": "x"}}
    assert replicas_seen(hpas_by_app(members)[SCALER], previous) == {"a": 5, "b": 4, "c": 3}
    assert replicas_seen(hpas_by_app(members)[SCALER], None) == {"a": 5, "b": 4}
    # a cluster that answers without the Deployment forgets it
    members["a"] = member("a", 1, None)
    assert replicas_seen(hpas_by_app(members)[SCALER], previous) == {"b": 4, "c": 3}


def test_a_scaling_window_raises_every_clusters_floor_by_its_share_and_closing_restores_it(
        tmp_path: Path) -> None:
    repo = spec_repo(tmp_path / "repo")
    fleet = fake_fleet(compile_path(repo))
    FakePass(fleet, repo)
    clusters = clusters_running(fleet, "api")

    def floors() -> list[int]:
        return [(live(fleet, c, "HorizontalPodAutoscaler", "api") or {})["spec"]["minReplicas"]
                for c in clusters]

    assert floors() == [2, 2]
    opened = FakePass(fleet, repo, now=MONDAY_10_LA)
    assert floors() == [4, 4]  # 8 over two clusters
    scaler = opened.statuses["PinScaler/shop/api"]
    assert scaler["floor"] == 8 and scaler["activeSchedule"].startswith("0 9 * * 1-5")
    assert "until 2026-11-24T01:00:00Z" in scaler["activeSchedule"]
    steady = FakePass(fleet, repo, now=MONDAY_10_LA)
    assert steady.member_writes == 0, steady.lines
    closed = FakePass(fleet, repo)
    assert floors() == [2, 2]
    assert closed.statuses["PinScaler/shop/api"]["floor"] == 4
    assert "activeSchedule" not in closed.statuses["PinScaler/shop/api"]
