"""Each member's desired objects: shares of autoscaled workloads, objects by app, HPA
floors at their scheduled value, the Deployment an HPA scales (pure)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from pincompile.contract import ANNOTATION_SCALE_SCHEDULES
from reconciler.desired import (
    MemberState,
    by_app,
    int_or_none,
    shares,
    target_key,
    target_replicas,
    with_floor,
)

LABELS = {"pincompute.io/project": "shop", "pincompute.io/app": "cart",
          "pincompute.io/kind": "PinApp"}
CART = ("PinApp", "shop", "cart")


def obj(kind: str, name: str = "cart", labels: dict[str, str] | None = None,
        **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": kind, "spec": spec, "metadata": {
        "name": name, "namespace": "shop", "labels": dict(LABELS if labels is None else labels)}}


def hpa(low: int = 1, high: int = 6, annotations: dict[str, str] | None = None
        ) -> dict[str, Any]:
    out = obj("HorizontalPodAutoscaler", labels={**LABELS, "pincompute.io/kind": "PinScaler"},
              minReplicas=low, maxReplicas=high,
              scaleTargetRef={"apiVersion": "apps/v1", "kind": "Deployment", "name": "cart"})
    out["metadata"]["annotations"] = annotations or {}
    return out


def plan_of(*shards: tuple[str, int, int | None]) -> Any:
    """A placement plan deciding ``cart``: (cluster, replicas, minReplicas) per shard."""
    decision = SimpleNamespace(shards=[SimpleNamespace(cluster=c, replicas=r, min_replicas=m)
                                       for c, r, m in shards])
    return SimpleNamespace(decision=lambda app: decision if app == CART else None)


def test_only_an_autoscaled_deployment_gets_its_share_of_the_apps_replicas() -> None:
    deployment, service = obj("Deployment", replicas=3), obj("Service")
    plan = plan_of(("a", 4, 1), ("b", 5, 2))
    assert shares(plan, "a", [deployment, service]) == {("Deployment", "shop", "cart"): 4}
    assert shares(plan, "c", [deployment]) == {}
    assert shares(plan_of(("a", 4, None)), "a", [deployment]) == {}  # no HPA: no share
    assert shares(None, "a", [deployment]) == {}
    assert shares(plan, "a", [obj("Deployment", labels={})]) == {}  # no app


def test_by_app_finds_each_apps_objects_with_their_index_per_member() -> None:
    a = MemberState("a", "ctx-a", "z1", [obj("Namespace", "shop", labels={}),
                                         obj("Deployment"), hpa()])
    b = MemberState("b", "ctx-b", "z2", [hpa()])
    found = by_app([a, b], lambda o, _app: o["kind"] == "HorizontalPodAutoscaler")
    scaler = ("PinScaler", "shop", "cart")
    assert set(found) == {scaler}
    assert {c: i for c, (i, _) in found[scaler].items()} == {"a": 2, "b": 0}
    assert by_app([a, b], lambda _o, _a: False) == {}


def test_with_floor_raises_an_hpa_in_its_window_and_echoes_a_bad_schedule() -> None:
    window = [{"cron": "0 8 * * *", "timezone": "UTC", "duration": "2h", "minReplicas": 4}]
    scheduled = hpa(annotations={ANNOTATION_SCALE_SCHEDULES: json.dumps(window)})
    lines: list[str] = []
    inside = with_floor(scheduled, datetime(2026, 11, 22, 9, 0, tzinfo=UTC), lines.append)
    assert inside["spec"]["minReplicas"] == 4
    outside = with_floor(scheduled, datetime(2026, 11, 22, 12, 0, tzinfo=UTC), lines.append)
    assert outside["spec"]["minReplicas"] == 1
    deployment = obj("Deployment")
    assert with_floor(deployment, datetime.now(UTC), lines.append) is deployment
    assert lines == []
    broken = hpa(annotations={ANNOTATION_SCALE_SCHEDULES: "not json"})
    assert with_floor(broken, datetime.now(UTC), lines.append) is broken
    assert len(lines) == 1 and "schedules ignored" in lines[0]


def test_the_deployment_an_hpa_scales_and_its_live_replicas() -> None:
    member = MemberState("a", "ctx", "z")
    assert target_key(hpa()) == ("Deployment", "shop", "cart")
    assert target_replicas(member, hpa()) is None
    member.live[("Deployment", "shop", "cart")] = obj("Deployment", replicas=5)
    assert target_replicas(member, hpa()) == 5
    member.live[("Deployment", "shop", "cart")] = obj("Deployment", replicas="5")
    assert target_replicas(member, hpa()) is None


def test_int_or_none_takes_only_ints() -> None:
    assert [int_or_none(v) for v in (3, 0, True, "3", 2.0, None)] == [3, 0, None, None, None,
                                                                      None]
