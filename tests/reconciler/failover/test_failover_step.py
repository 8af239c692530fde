"""Failover and failback through whole passes on clusters held in memory, each pass by a new
reconciler (the state comes from the host) at an injected failover-clock instant: a member
that stops answering is only unreachable under the grace period and lost past it (its
share moves, a PinPod with ``failover: true`` is recreated elsewhere, the other is
stranded, a scaled app's floors carry its replicas); once it answers again its share comes
back in steps; a cordon in the specs moves it at once. The same on real control planes,
with their controllers and HPAs, is ``test_failover_e2e.py``."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from pincompile.compiler import compile_path
from tests.support.fake_passes import FakePass, commit, fake_fleet, live, spec_repo
from tests.support.kube_fake import FakeFleet

FIXTURE_REPO = Path(__file__).parents[1] / "fixtures" / "failover"
MEMBERS = ("fo-a", "fo-b", "fo-c")
T0 = 1_900_000_000.0
GRACE = 300.0


def run(fleet: FakeFleet, repo: Path, at: float) -> FakePass:
    return FakePass(fleet, repo, engine={"failover_after": GRACE, "failback_step": "2",
                                         "failover_clock": lambda: at})


def states(done: FakePass) -> dict[str, dict[str, Any]]:
    return {n: s.to_json() for n, s in done.reconciler.cluster_states.items()}


def replicas(fleet: FakeFleet, name: str, clusters: tuple[str, ...] = MEMBERS
             ) -> dict[str, int]:
    """``spec.replicas`` of Deployment shop/``name`` per cluster (0: none there)."""
    return {c: int((live(fleet, c, "Deployment", name) or {"spec": {"replicas": 0}})
                   ["spec"]["replicas"]) for c in clusters}


def hpa_bounds(fleet: FakeFleet, name: str, clusters: tuple[str, ...] = MEMBERS
               ) -> dict[str, tuple[int, int]]:
    out = {}
    for cluster in clusters:
        spec = (live(fleet, cluster, "HorizontalPodAutoscaler", name) or {})["spec"]
        out[cluster] = (int(spec["minReplicas"]), int(spec["maxReplicas"]))
    return out


def cpu(quantity: str) -> Decimal:
    """A cpu quantity (``1648m``, ``2``) in cores."""
    return Decimal(quantity[:-1]) / 1000 if quantity.endswith("m") else Decimal(quantity)


def pods(fleet: FakeFleet, cluster: str) -> set[str]:
    return {k[2] for k in fleet.clusters[cluster].objects if k[0] == "Pod"}


@pytest.fixture
def placed(tmp_path: Path) -> tuple[FakeFleet, Path]:
    repo = spec_repo(tmp_path / "repo", FIXTURE_REPO)
    fleet = fake_fleet(compile_path(repo))
    first = run(fleet, repo, T0)
    assert first.report.ok, first.lines
    assert replicas(fleet, "web") == {"fo-a": 4, "fo-b": 4, "fo-c": 4}
    assert pods(fleet, "fo-c") == {"notebook", "scratch"}
    assert states(first) == {c: {"phase": "Reachable"} for c in MEMBERS}
    return fleet, repo


def test_an_outage_under_the_grace_moves_nothing_and_past_it_the_share_moves(
        placed: tuple[FakeFleet, Path]) -> None:
    fleet, repo = placed
    cart_before = replicas(fleet, "cart")
    fleet.clusters["fo-c"].down = "connection refused"
    down = T0 + 1000
    assert states(run(fleet, repo, down))["fo-c"]["phase"] == "Unreachable"
    almost = run(fleet, repo, down + GRACE - 1)
    assert states(almost)["fo-c"]["phase"] == "Unreachable"
    assert almost.member_writes == 0, almost.lines  # merely unreachable: nothing moves

    lost = run(fleet, repo, down + GRACE)
    assert states(lost)["fo-c"]["phase"] == "Lost", lost.lines
    assert "unreachable for 300s" in states(lost)["fo-c"]["reason"]
    assert replicas(fleet, "web", ("fo-a", "fo-b")) == {"fo-a": 6, "fo-b": 6}
    assert pods(fleet, "fo-a") | pods(fleet, "fo-b") == {"notebook"}
    web = lost.statuses["PinApp/shop/web"]["failover"]
    assert web["phase"] == "FailedOver" and web["clusters"] == ["fo-c"]
    assert web["replicas"] == {"fo-a": 6, "fo-b": 6}
    assert web["normalReplicas"] == {"fo-a": 4, "fo-b": 4, "fo-c": 4}
    scratch = lost.statuses["PinPod/shop/scratch"]
    assert scratch["failover"]["phase"] == "Stranded"
    assert "failover: false, so it is not recreated elsewhere" in scratch["message"]
    bounds = hpa_bounds(fleet, "api", ("fo-a", "fo-b"))
    assert sum(low for low, _ in bounds.values()) == 3, bounds
    assert sum(high for _, high in bounds.values()) == 9, bounds
    cart = lost.statuses["PinScaler/shop/cart"]["failover"]["capacity"]
    assert cart["carried"] == {"fo-c": cart_before["fo-c"]}, (cart, lost.lines)
    assert sum(cart["floors"].values()) == sum(cart_before.values())
    assert {c: low for c, (low, _) in hpa_bounds(fleet, "cart", ("fo-a", "fo-b")).items()} \
        == cart["floors"]
    assert lost.statuses["PinApp/shop/cart"]["replicas"] == sum(cart_before.values())
    host = fleet.clusters["host"].objects[("Cluster", "", "fo-c")]
    assert host["status"]["failover"]["phase"] == "Lost"

    again = run(fleet, repo, down + GRACE + 60)  # a new reconciler keeps the state
    assert states(again)["fo-c"]["phase"] == "Lost"
    assert states(again)["fo-c"]["since"] == states(lost)["fo-c"]["since"]
    assert again.member_writes == 0, again.lines


def test_a_returning_cluster_takes_its_share_back_in_steps(
        placed: tuple[FakeFleet, Path]) -> None:
    fleet, repo = placed
    fleet.clusters["fo-c"].down = "connection refused"
    run(fleet, repo, T0 + 1000)
    run(fleet, repo, T0 + 1000 + GRACE)
    fleet.clusters["fo-c"].down = None
    back = T0 + 5000
    step1 = run(fleet, repo, back)
    assert step1.report.ok, step1.lines
    assert states(step1)["fo-c"]["phase"] == "Returning"
    assert states(step1)["fo-c"]["failbackSteps"] == 1
    counts = replicas(fleet, "web")
    assert counts["fo-c"] == 2 and sum(counts.values()) == 12, counts  # --failback-step 2
    web = step1.statuses["PinApp/shop/web"]["failover"]
    assert web["phase"] == "FailingBack" and web["failback"] == {"back": 2, "of": 4}
    assert hpa_bounds(fleet, "api") == {c: (1, 3) for c in MEMBERS}  # at once
    assert pods(fleet, "fo-c") == {"notebook", "scratch"}
    assert not pods(fleet, "fo-a") | pods(fleet, "fo-b")

    step2 = run(fleet, repo, back + 60)
    assert replicas(fleet, "web") == {"fo-a": 4, "fo-b": 4, "fo-c": 4}
    assert states(step2)["fo-c"]["phase"] == "Reachable"
    assert "failover" not in step2.statuses["PinApp/shop/web"]
    quota = step2.result.plan.quotas[("shop", "ondemand", "fo-a")]["cpu"]  # shrunk back
    held = [o for k, o in fleet.clusters["fo-a"].objects.items()
            if k[0] == "ResourceQuota" and "ondemand" in k[2]]
    assert [cpu(q["spec"]["hard"]["requests.cpu"]) for q in held] == [Decimal(quota)]
    steady = run(fleet, repo, back + 120)
    assert steady.member_writes == 0, steady.lines
    assert sum(n for c, n in steady.dry_runs.items() if c != "host") == 0


def set_schedulable(repo: Path, cluster: str, value: bool) -> None:
    path = repo / "platform/clusters/clusters.yaml"
    docs = list(yaml.safe_load_all(path.read_text()))
    for doc in docs:
        if doc["metadata"]["name"] == cluster:
            doc["spec"]["schedulable"] = value
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    commit(repo, f"{cluster} schedulable: {value}")


def test_a_cordon_moves_the_share_out_at_once_and_uncordoning_brings_it_back_in_steps(
        placed: tuple[FakeFleet, Path]) -> None:
    fleet, repo = placed
    set_schedulable(repo, "fo-a", False)
    at = T0 + 9000
    cordoned = run(fleet, repo, at)
    assert states(cordoned)["fo-a"] == {**states(cordoned)["fo-a"], "phase": "Lost",
                                        "reason": "cordoned (schedulable: false)"}
    assert replicas(fleet, "web", ("fo-b", "fo-c")) == {"fo-b": 6, "fo-c": 6}
    set_schedulable(repo, "fo-a", True)
    step1 = run(fleet, repo, at + 60)
    assert states(step1)["fo-a"]["phase"] == "Returning"
    counts = replicas(fleet, "web")
    assert counts["fo-a"] == 2 and sum(counts.values()) == 12, counts
    run(fleet, repo, at + 120)
    assert replicas(fleet, "web") == {"fo-a": 4, "fo-b": 4, "fo-c": 4}
