"""Waiting for what a pass wrote: what is waited for, and the wait as a check repeated on a
clock (a fake one here: the waits are seconds of it, none of them slept)."""

from __future__ import annotations

from typing import Any

from reconciler.health.wait import Waiting, settle, waited_for
from reconciler.plan.change import Action, Change
from reconciler.plan.cluster_plan import ClusterPlan
from tests.support.clock import FakeClock


def obj(kind: str, name: str, generation: int = 1) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": kind,
            "metadata": {"name": name, "namespace": "shop", "generation": generation}}


def change(action: Action, kind: str, name: str, **fields: Any) -> Change:
    return Change(action, (kind, "shop", name), desired=obj(kind, name), **fields)


def test_a_pass_waits_for_its_writes_but_prunes_and_run_to_completion_kinds() -> None:
    plan = ClusterPlan("rt-a", [
        change(Action.CREATE, "Deployment", "web"),
        change(Action.UPDATE, "Service", "web"),
        change(Action.REPLACE, "Job", "migrate"),
        change(Action.CREATE, "CronJob", "nightly"),
        change(Action.PRUNE, "ConfigMap", "old"),
        change(Action.UNCHANGED, "Deployment", "api"),
        # re-recorded: one that moved the generation (its controller has work), one not
        change(Action.UNCHANGED, "Deployment", "moved", restamp=True,
               live=obj("Deployment", "moved", 1), predicted=obj("Deployment", "moved", 2)),
        change(Action.UNCHANGED, "Deployment", "same", restamp=True,
               live=obj("Deployment", "same", 3), predicted=obj("Deployment", "same", 3)),
    ])
    assert [o["metadata"]["name"] for o in waited_for(plan)] == ["web", "web", "moved"]


def waiting_for(*names: str) -> Waiting:
    objects = [obj("Deployment", n) for n in names]
    return Waiting({"rt-a": objects}, {"rt-a": len(objects)})


def test_the_wait_checks_every_second_until_everything_is_healthy() -> None:
    clock = FakeClock()
    waiting = waiting_for("web", "api")
    checked: list[float] = []
    healthy_at = {"web": 2.0, "api": 3.0}

    def check() -> None:
        now = clock.monotonic()
        checked.append(now)
        waiting.objects["rt-a"] = [o for o in waiting.objects["rt-a"]
                                   if healthy_at[o["metadata"]["name"]] > now]

    took = settle(waiting, check, timeout=300, clock=clock)
    assert checked == [0.0, 1.0, 2.0, 3.0] and took == 3.0
    assert not waiting.progressing and waiting.healthy("rt-a") == 2


def test_the_wait_gives_up_at_its_timeout_and_says_what_is_left() -> None:
    clock = FakeClock()
    waiting = waiting_for("never-ready")
    checks = []
    took = settle(waiting, lambda: checks.append(clock.monotonic()), timeout=300, clock=clock)
    assert took == 300.0 and len(checks) == 300
    assert waiting.progressing and waiting.healthy("rt-a") == 0


def test_nothing_written_is_no_wait() -> None:
    clock = FakeClock()
    checks: list[float] = []
    assert settle(Waiting(), lambda: checks.append(0.0), timeout=300, clock=clock) == 0.0
    assert checks == []
