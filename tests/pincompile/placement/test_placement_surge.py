"""Rollouts fit: quota and capacity count the surge pods of each cluster's share (rounded
up like the Deployment controller), the ResourceQuotas leave that room, and a rollout that
could not fit is an error naming the surge. Preemptible workloads never block others; the
reserved pool is for reserved workloads only."""

from __future__ import annotations

from decimal import Decimal

import pytest

from pincompile.placement.context import rollout_surge
from tests.support.placement import app, cluster, doc, place, project, template


@pytest.mark.parametrize(("surge", "desired", "extra"), [
    ("25%", 4, 1), ("25%", 5, 2), ("25%", 1, 1), ("0%", 7, 0), ("100%", 3, 3), (2, 5, 2),
    (10, 3, 3), ("25%", 0, 0),
])
def test_surge_rounds_up_like_the_deployment_controller(surge: int | str, desired: int,
                                                        extra: int) -> None:
    assert rollout_surge(surge, desired) == extra


def _app(replicas: int, surge: str | int, **spec: object) -> str:
    return app("web", replicas=replicas, pod=template(cpu="1", memory="1Gi"),
               rollout={"maxSurge": surge, "maxUnavailable": 0}, **spec)


QUOTA_5 = {"ondemand": {"cpu": "5", "memory": "5Gi"}}


def test_quota_full_at_steady_state_plus_surge_is_valid_and_sized_with_room() -> None:
    p, diags = place(cluster("a"), project(quota=QUOTA_5), _app(4, "25%"))
    assert diags == []
    assert p.quotas[("team", "ondemand", "a")]["cpu"] == Decimal(5)  # 4 pods + 1 surge


def test_a_rollout_that_cannot_fit_is_an_error_naming_the_surge() -> None:
    _, diags = place(cluster("a"), project(quota={"ondemand": {"cpu": "4", "memory": "5Gi"}}),
                     _app(4, "25%"))
    [d] = [d for d in diags if d.code == "quota-exceeded"]
    assert "request 5 (including 1 for the extra pods a rollout or overlapping run " \
           "creates: PinApp web 1)" in d.message
    assert d.hint is not None and d.hint.startswith("the steady state fits, but a rollout")
    assert "rollout.maxSurge" in d.hint


def test_surge_is_per_cluster_share_rounded_up() -> None:
    # 5 replicas over two clusters (3 + 2): 25% rounds up to one extra pod in each
    p, diags = place(cluster("a", zone="z1"), cluster("b", zone="z2"),
                     project(quota={"ondemand": {"cpu": "7", "memory": "7Gi"}}),
                     _app(5, "25%"))
    assert diags == []
    assert sum(p.quotas[("team", "ondemand", c)]["cpu"] for c in "ab") == Decimal(7)


def test_capacity_counts_the_surge() -> None:
    _, diags = place(cluster("a", cpu="4"), project(), _app(4, 1, placement={"spread": "none"}))
    assert [d.code for d in diags] == ["cluster-over-capacity"]
    assert "rollout surge included" in diags[0].message


def test_cronjob_with_overlapping_runs_counts_two_runs() -> None:
    cron = doc("PinterestCronJob", "tick", {"schedule": "* * * * *",
                                           "concurrencyPolicy": "Allow",
                                           "template": template(cpu="3")}, "team")
    _, diags = place(cluster("a"), project(quota={"ondemand": {"cpu": "5", "memory": "9Gi"}}),
                     cron)
    [d] = [d for d in diags if d.code == "quota-exceeded"]
    assert "request 6" in d.message
    forbid = cron.replace('"Allow"', '"Forbid"')
    assert place(cluster("a"), project(quota={"ondemand": {"cpu": "5", "memory": "9Gi"}}),
                 forbid)[1] == []


def test_preemptible_never_blocks_and_is_placed_against_spare_capacity() -> None:
    filler = app("filler", replicas=8, tier="preemptible", pod=template(cpu="8"),
                 placement={"spread": "none"})
    critical = app("critical", replicas=8, tier="reserved", pod=template(cpu="8"),
                   placement={"spread": "none"})
    _, diags = place(cluster("a", cpu="64"), project(), filler, critical)
    assert diags == []  # 64 preemptible + 64 reserved cpu in a 64-cpu cluster


def test_reserved_pool_is_only_for_reserved_workloads() -> None:
    pooled = cluster("a", cpu="64", reservedCapacity={"cpu": "48"})
    ondemand = app("web", replicas=3, pod=template(cpu="8"), placement={"spread": "none"})
    _, diags = place(pooled, project(), ondemand)
    assert [d.code for d in diags] == ["insufficient-capacity"]  # 16 cpu left: 2 pods
    reserved = app("api", replicas=6, tier="reserved", pod=template(cpu="8"),
                   placement={"spread": "none"})
    _, diags = place(pooled, project(), reserved)
    assert diags == []  # 48 cpu in the reserved pool
    too_many = app("api", replicas=7, tier="reserved", pod=template(cpu="8"),
                   placement={"spread": "none"})
    _, diags = place(pooled, project(), too_many)
    assert [d.code for d in diags] == ["insufficient-capacity"]
