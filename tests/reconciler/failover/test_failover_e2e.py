"""Cluster failover end to end, on a fleet of real control planes (kwok nodes): the
exclusive fleet's ``fo-*`` clusters (it stops one: no other module may see it fail).

Three zonal members carry PinApp ``web`` (12 replicas, 4 per zone), PinApp ``api`` with a
PinScaler (3..9, HPA bounds 1..3 per zone), PinApp ``cart`` with a PinScaler running above
its floor (9 replicas, 3 per zone, HPA bounds 1..6) and, in ``fo-c``, two PinPods:
``notebook`` (failover: true) and ``scratch`` (failover: false). The tests run in
file order against one fleet: ``fo-c``'s API server is stopped past the grace period, its
share moves to ``fo-a`` and ``fo-b`` (cart's 3 replicas there held by the survivors' HPA
floors); it is started again and the share moves back in steps; then ``fo-a`` is cordoned
in the specs and uncordoned; last, ``pincompile fleet load`` holds ``api``'s pods in ``fo-b``
at 90% cpu, its real HPA scales to its maximum, and the next pass moves maxReplicas share
to it.

The failover clock is injected (epoch seconds): the grace period is the default 5 minutes
and no test sleeps through it.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from kubernetes import client as k8s

from pincompile.cli import cli
from pincompile.compiler import compile_path
from pincompile.models.types import parse_quantity
from reconciler.engine import Reconciler
from reconciler.fleet import fleet as fleet_mod
from reconciler.model import PassReport
from reconciler.plan.cluster_plan import Options
from tests.conftest import api_clients
from tests.support.fake_passes import one_pass
from tests.support.fleet import git, spec_repo, timer
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e
FIXTURE_REPO = Path(__file__).parents[1] / "fixtures" / "failover"
MEMBERS = ("fo-a", "fo-b", "fo-c")
SUNDAY = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
#: The failover clock's origin (epoch seconds); every pass says where it stands.
T0 = 1_900_000_000.0
GRACE = 300.0
#: The project's ondemand cpu quota (fixtures/failover/platform/projects/shop.yaml).
PROJECT_CPU = Decimal(6)
#: cart's PinScaler scales down after this long below its target (its cooldown.scaleDown)
CART_SCALE_DOWN = 15


@pytest.fixture(scope="module")
def fo_fleet(exclusive_fleet: fleet_mod.FleetState) -> fleet_mod.FleetState:
    """Three member clusters (zones a, b, c of fo-east) and a host."""
    return exclusive_fleet


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository holding a copy of the fixture specs."""
    return spec_repo(FIXTURE_REPO, tmp_path_factory.mktemp("failover") / "repo")


@pytest.fixture(scope="module")
def api(fo_fleet: fleet_mod.FleetState) -> Iterator[Callable[[str], k8s.ApiClient]]:
    with api_clients(fo_fleet.kubeconfig) as get:
        yield get


class Pass:
    """One reconcile pass by a new reconciler (nothing kept in memory between passes: the
    failover state must come from the host), at failover-clock instant ``at``."""

    def __init__(self, fleet: fleet_mod.FleetState, repo: Path, at: float,
                 **options: Any) -> None:
        self.lines: list[str] = []
        reconciler = Reconciler(str(fleet.kubeconfig), options=Options(**options),
                                echo=self.lines.append, clock=lambda: SUNDAY,
                                failover_after=GRACE, failback_step="2",
                                failover_clock=lambda: at)
        try:
            self.result = compile_path(repo)
            self.report: PassReport = one_pass(reconciler, self.result, wait=120)
            self.writes = Counter({n: c.stats.writes for n, c in reconciler.connections.items()})
            self.dry_runs = Counter({n: c.stats.by_verb["dry-run"]
                                     for n, c in reconciler.connections.items()})
            self.statuses = {"/".join(k): v for k, v in reconciler.statuses.items()}
            self.states = {n: s.to_json() for n, s in reconciler.cluster_states.items()}
        finally:
            reconciler.close()

    def result_quota(self, cluster: str) -> Decimal:
        """The project's ondemand cpu quota in ``cluster`` as the specs divide it."""
        return Decimal(self.result.plan.quotas[("shop", "ondemand", cluster)]["cpu"])


def web_replicas(api: Callable[[str], k8s.ApiClient], clusters: tuple[str, ...] = MEMBERS
                 ) -> dict[str, int]:
    """``spec.replicas`` of Deployment shop/web per reachable cluster (0: none there)."""
    out = {}
    for cluster in clusters:
        try:
            live = k8s.AppsV1Api(api(cluster)).read_namespaced_deployment("web", "shop")
            out[cluster] = int(live.spec.replicas)
        except k8s.ApiException as exc:
            assert exc.status == 404
            out[cluster] = 0
    return out


def ready_web(api: Callable[[str], k8s.ApiClient], clusters: tuple[str, ...]
              ) -> dict[str, int]:
    """Wait until web's Deployments in ``clusters`` have all their pods available (pods
    the quota refused would never be); returns the available counts."""
    def available() -> dict[str, int] | None:
        counts = {}
        for cluster in clusters:
            d = k8s.AppsV1Api(api(cluster)).read_namespaced_deployment("web", "shop")
            if int(d.status.available_replicas or 0) != int(d.spec.replicas):
                return None
            counts[cluster] = int(d.spec.replicas)
        return counts

    found: dict[str, int] = wait_for(available, 120,
                                     f"web fully available in {', '.join(clusters)}", interval=2)
    return found


def pods_named(api: Callable[[str], k8s.ApiClient], cluster: str) -> set[str]:
    pods = k8s.CoreV1Api(api(cluster)).list_namespaced_pod(
        "shop", label_selector="pincompute.io/kind=PinPod").items
    return {p.metadata.name for p in pods if p.metadata.deletion_timestamp is None}


def quota_cpu(api: Callable[[str], k8s.ApiClient], cluster: str) -> Decimal:
    quotas = k8s.CoreV1Api(api(cluster)).list_namespaced_resource_quota("shop").items
    return sum((parse_quantity(q.spec.hard["requests.cpu"]) for q in quotas
                if "ondemand" in q.metadata.name), Decimal(0))


def host_failover(api: Callable[[str], k8s.ApiClient], cluster: str) -> dict[str, Any]:
    cr = k8s.CustomObjectsApi(api("host")).get_cluster_custom_object(
        "pincompute.io", "v1", "clusters", cluster)
    return dict((cr.get("status") or {}).get("failover") or {})


def hpa_bounds(api: Callable[[str], k8s.ApiClient], clusters: tuple[str, ...] = MEMBERS,
               name: str = "api") -> dict[str, tuple[int, int]]:
    """(minReplicas, maxReplicas) of HPA shop/``name`` per cluster."""
    out = {}
    for c in clusters:
        spec = k8s.AutoscalingV2Api(api(c)).read_namespaced_horizontal_pod_autoscaler(
            name, "shop").spec
        out[c] = (int(spec.min_replicas), int(spec.max_replicas))
    return out


def hpa_maxima(api: Callable[[str], k8s.ApiClient]) -> dict[str, int]:
    return {c: high for c, (_, high) in hpa_bounds(api).items()}


def status_cli(fleet: fleet_mod.FleetState, *args: str) -> str:
    run = CliRunner().invoke(cli, ["status", "--kubeconfig", str(fleet.kubeconfig), *args])
    assert run.exit_code == 0, run.output
    return run.output


def deployment_replicas(api: Callable[[str], k8s.ApiClient], name: str,
                        clusters: tuple[str, ...] = MEMBERS) -> dict[str, int]:
    """``spec.replicas`` of Deployment shop/``name`` per cluster."""
    return {c: int(k8s.AppsV1Api(api(c)).read_namespaced_deployment(name, "shop").spec
                   .replicas) for c in clusters}


def ready_replicas(api: Callable[[str], k8s.ApiClient], name: str,
                   clusters: tuple[str, ...]) -> int:
    """Ready pods of Deployment shop/``name`` over ``clusters``."""
    return sum(int(k8s.AppsV1Api(api(c)).read_namespaced_deployment(name, "shop").status
                   .ready_replicas or 0) for c in clusters)


def watch_ready(api: Callable[[str], k8s.ApiClient], name: str, clusters: tuple[str, ...],
                seconds: float) -> set[int]:
    """Every Ready count of Deployment shop/``name`` over ``clusters`` seen in ``seconds``
    (read every 2 s)."""
    seen = set()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        seen.add(ready_replicas(api, name, clusters))
        time.sleep(2)
    return seen


def member_writes(run: Pass) -> int:
    return sum(n for c, n in run.writes.items() if c != "host")


# --- 1. everything runs where the specs put it -------------------------------------------

def test_apply_places_web_in_three_zones_and_both_pods_in_fo_c(
        fo_fleet: fleet_mod.FleetState, repo: Path, api: Callable[[str], k8s.ApiClient]
) -> None:
    first = Pass(fo_fleet, repo, T0)
    assert first.report.ok, (first.report, first.lines)
    assert web_replicas(api) == {"fo-a": 4, "fo-b": 4, "fo-c": 4}
    assert ready_web(api, MEMBERS) == {"fo-a": 4, "fo-b": 4, "fo-c": 4}
    assert pods_named(api, "fo-c") == {"notebook", "scratch"}
    assert hpa_bounds(api) == {c: (1, 3) for c in MEMBERS}
    assert hpa_bounds(api, name="cart") == {c: (1, 6) for c in MEMBERS}
    wait_for(lambda: ready_replicas(api, "cart", MEMBERS) == 9, 120, "cart's 9 replicas Ready",
             interval=2)
    assert first.states == {c: {"phase": "Reachable"} for c in MEMBERS}
    assert not any("failover" in s for s in first.statuses.values())


# --- 2. lost past the grace period ----------------------------------------------------------

def test_an_outage_under_the_grace_moves_nothing_and_past_it_fo_c_share_moves(
        fo_fleet: fleet_mod.FleetState, repo: Path, api: Callable[[str], k8s.ApiClient]
) -> None:
    cart_before = deployment_replicas(api, "cart")  # 3 each, unless a metric dipped
    fleet_mod.stop_component(fo_fleet, "fo-c", "kube-apiserver")
    down = T0 + 1000
    slow = Pass(fo_fleet, repo, down)
    assert slow.report.clusters["fo-c"].error
    assert slow.states["fo-c"]["phase"] == "Unreachable"
    almost = Pass(fo_fleet, repo, down + GRACE - 1)
    assert almost.states["fo-c"]["phase"] == "Unreachable"
    assert member_writes(almost) == 0, almost.lines  # merely unreachable: nothing moves
    assert web_replicas(api, ("fo-a", "fo-b")) == {"fo-a": 4, "fo-b": 4}

    lost = Pass(fo_fleet, repo, down + GRACE)
    assert lost.states["fo-c"]["phase"] == "Lost", lost.lines
    assert "unreachable for 300s" in lost.states["fo-c"]["reason"]
    # its 4 replicas run in the other two clusters: the total holds, every pod admitted
    assert web_replicas(api, ("fo-a", "fo-b")) == {"fo-a": 6, "fo-b": 6}
    assert ready_web(api, ("fo-a", "fo-b")) == {"fo-a": 6, "fo-b": 6}
    # the reachable clusters' quotas grew within the project's quota
    assert sum(quota_cpu(api, c) for c in ("fo-a", "fo-b")) <= PROJECT_CPU
    normal = compile_path(repo).plan.quotas  # the specs' division, with fo-c
    assert quota_cpu(api, "fo-a") > Decimal(normal[("shop", "ondemand", "fo-a")]["cpu"])
    # notebook (failover: true) is recreated elsewhere; scratch (failover: false) is not
    elsewhere = pods_named(api, "fo-a") | pods_named(api, "fo-b")
    assert elsewhere == {"notebook"}
    web = lost.statuses["PinApp/shop/web"]["failover"]
    assert web["phase"] == "FailedOver" and web["clusters"] == ["fo-c"]
    assert web["replicas"] == {"fo-a": 6, "fo-b": 6}
    assert web["normalReplicas"] == {"fo-a": 4, "fo-b": 4, "fo-c": 4}
    scratch = lost.statuses["PinPod/shop/scratch"]
    assert scratch["failover"]["phase"] == "Stranded"
    assert "failover: false, so it is not recreated elsewhere" in scratch["message"]
    assert lost.statuses["PinPod/shop/notebook"]["failover"]["phase"] == "FailedOver"
    # the autoscaled app's HPA bounds are divided over the two: the scaler's 3..9 hold
    bounds = hpa_bounds(api, ("fo-a", "fo-b"))
    assert sum(low for low, _ in bounds.values()) == 3, bounds
    assert sum(high for _, high in bounds.values()) == 9, bounds
    assert lost.statuses["PinScaler/shop/api"]["failover"]["phase"] == "FailedOver"
    assert host_failover(api, "fo-c")["phase"] == "Lost"
    # cart ran a third of its replicas in fo-c: the survivors' floors take them over
    total = sum(cart_before.values())
    cart = lost.statuses["PinScaler/shop/cart"]["failover"]["capacity"]
    assert cart["carried"] == {"fo-c": cart_before["fo-c"]}, (cart, lost.lines)
    assert sum(cart["floors"].values()) == total, (cart, cart_before)
    bounds = hpa_bounds(api, ("fo-a", "fo-b"), "cart")
    assert {c: low for c, (low, _) in bounds.items()} == cart["floors"], bounds
    assert sum(high for _, high in bounds.values()) == 18, bounds
    # its status counts against the app's replicas, not against what is left
    assert lost.statuses["PinApp/shop/cart"]["replicas"] == total
    assert lost.statuses["PinApp/shop/cart"]["ready"].endswith(f"/{total}")
    wait_for(lambda: ready_replicas(api, "cart", ("fo-a", "fo-b")) == total, 120,
             f"cart's {total} replicas Ready in fo-a and fo-b", interval=2)
    # and they stay so, past the HPAs' scale-down window and their next two syncs
    window = CART_SCALE_DOWN + 2 * timer(fo_fleet, "hpa_sync_seconds") + 5
    assert watch_ready(api, "cart", ("fo-a", "fo-b"), window) == {total}

    # pincompile status tells the story, as a table and as JSON
    table = status_cli(fo_fleet)
    assert any(line.startswith("PinApp/shop/web") and "FailedOver" in line
               for line in table.splitlines()), table
    assert any(line.startswith("PinPod/shop/scratch") and "Stranded" in line
               for line in table.splitlines()), table
    assert any(line.startswith("fo-c") and "Lost" in line for line in table.splitlines())
    listed = json.loads(status_cli(fo_fleet, "-o", "json"))
    cluster_rows = {c["name"]: c["failover"] for c in listed["clusters"]}
    assert cluster_rows["fo-c"]["phase"] == "Lost"

    # a restarted reconciler keeps the state (from the host): nothing moves again
    again = Pass(fo_fleet, repo, down + GRACE + 60)
    assert again.states["fo-c"]["phase"] == "Lost"
    assert again.states["fo-c"]["since"] == lost.states["fo-c"]["since"]
    assert member_writes(again) == 0, again.lines
    assert again.statuses["PinApp/shop/cart"]["ready"] == f"{total}/{total}"
    assert again.statuses["PinApp/shop/cart"]["phase"] == "Healthy"


# --- 3. back: shares return in steps -------------------------------------------------------------

def test_when_fo_c_answers_again_its_share_moves_back_in_steps(
        fo_fleet: fleet_mod.FleetState, repo: Path, api: Callable[[str], k8s.ApiClient]
) -> None:
    # fo-c's kwok and controllers are restarted with it, so they watch it at once (what is
    # tested is the passes, not client-go's back-off)
    fleet_mod.start_component(fo_fleet, "fo-c", "kube-apiserver")
    back = T0 + 5000
    step1 = Pass(fo_fleet, repo, back)
    assert step1.report.ok, (step1.report, step1.lines)
    assert step1.states["fo-c"] == {"phase": "Returning", "reason": step1.states["fo-c"][
        "reason"], "since": step1.states["fo-c"]["since"], "failbackSteps": 1}
    counts = web_replicas(api)
    assert counts["fo-c"] == 2 and sum(counts.values()) == 12, counts  # --failback-step 2
    assert ready_web(api, MEMBERS) == counts
    web = step1.statuses["PinApp/shop/web"]["failover"]
    assert web["phase"] == "FailingBack" and web["failback"] == {"back": 2, "of": 4}
    table = status_cli(fo_fleet)
    assert any(line.startswith("PinApp/shop/web") and "FailingBack 2/4" in line
               for line in table.splitlines()), table
    assert any(line.startswith("fo-c") and "Returning (step 1)" in line
               for line in table.splitlines()), table
    # the autoscaled app's bounds and the PinPod move back at once
    assert hpa_bounds(api) == {c: (1, 3) for c in MEMBERS}
    assert hpa_bounds(api, name="cart") == {c: (1, 6) for c in MEMBERS}
    assert "failover" not in step1.statuses["PinScaler/shop/cart"]
    wait_for(lambda:
             ready_replicas(api, "cart", MEMBERS) >= sum(deployment_replicas(api, "cart")
                                                         .values()) >= 9, 120,
             "cart's replicas in fo-c back beside the ones the others held")
    assert pods_named(api, "fo-c") == {"notebook", "scratch"}  # the original is kept
    assert not (pods_named(api, "fo-a") | pods_named(api, "fo-b"))

    step2 = Pass(fo_fleet, repo, back + 60)
    assert web_replicas(api) == {"fo-a": 4, "fo-b": 4, "fo-c": 4}
    assert step2.states["fo-c"]["phase"] == "Reachable"
    assert "failover" not in step2.statuses["PinApp/shop/web"]
    assert host_failover(api, "fo-c")["phase"] == "Reachable"
    # the grown quotas shrink back to the specs' sizes in that same pass
    assert quota_cpu(api, "fo-a") == step2.result_quota("fo-a"), step2.lines
    steady = Pass(fo_fleet, repo, back + 120)  # so the pass after it writes nothing
    assert member_writes(steady) == 0, steady.lines
    # and every object's record answers: not one dry-run
    assert sum(n for c, n in steady.dry_runs.items() if c != "host") == 0, steady.dry_runs
    assert not any(line.startswith("fo-") for line in status_cli(fo_fleet).splitlines())


# --- 4. a cordon in the specs ----------------------------------------------------------------

def set_schedulable(repo: Path, cluster: str, value: bool) -> None:
    path = repo / "platform/clusters/clusters.yaml"
    docs = list(yaml.safe_load_all(path.read_text()))
    for doc in docs:
        if doc["metadata"]["name"] == cluster:
            doc["spec"]["schedulable"] = value
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    git(repo, "commit", "-qam", f"{cluster} schedulable: {value}")


def test_a_cordon_moves_shares_out_and_uncordoning_moves_them_back_in_steps(
        fo_fleet: fleet_mod.FleetState, repo: Path, api: Callable[[str], k8s.ApiClient]
) -> None:
    set_schedulable(repo, "fo-a", False)
    at = T0 + 9000
    cordoned = Pass(fo_fleet, repo, at)
    assert cordoned.states["fo-a"]["phase"] == "Lost"
    assert cordoned.states["fo-a"]["reason"] == "cordoned (schedulable: false)"
    counts = web_replicas(api, ("fo-b", "fo-c"))
    assert counts == {"fo-b": 6, "fo-c": 6}, cordoned.lines
    assert ready_web(api, ("fo-b", "fo-c")) == counts
    set_schedulable(repo, "fo-a", True)
    step1 = Pass(fo_fleet, repo, at + 60)
    assert step1.states["fo-a"]["phase"] == "Returning"
    counts = web_replicas(api)
    assert counts["fo-a"] == 2 and sum(counts.values()) == 12, counts
    Pass(fo_fleet, repo, at + 120)
    assert web_replicas(api) == {"fo-a": 4, "fo-b": 4, "fo-c": 4}


# --- 5. a PinScaler's bounds follow the load -----------------------------------------------------


def fleet_load(fleet: fleet_mod.FleetState, *args: str) -> None:
    """``pincompile fleet load ARGS`` against this module's fleet."""
    run = CliRunner().invoke(cli, ["fleet", "load", *args, "--dir", str(fleet.dir)])
    assert run.exit_code == 0, run.output


def hpa_status(api: Callable[[str], k8s.ApiClient], cluster: str) -> tuple[int, str]:
    """HPA shop/api's current replicas in ``cluster`` and why its scaling is limited
    (its ScalingLimited reason when True, else "")."""
    hpa = k8s.AutoscalingV2Api(api(cluster)).read_namespaced_horizontal_pod_autoscaler(
        "api", "shop")
    limited = [c for c in hpa.status.conditions or [] if c.type == "ScalingLimited"
               and c.status == "True"]
    return int(hpa.status.current_replicas or 0), limited[0].reason if limited else ""


def test_a_cluster_whose_hpa_sits_at_its_maximum_gets_max_share_from_the_others(
        fo_fleet: fleet_mod.FleetState, repo: Path, api: Callable[[str], k8s.ApiClient]
) -> None:
    at = T0 + 20000
    Pass(fo_fleet, repo, at)
    assert hpa_maxima(api) == {"fo-a": 3, "fo-b": 3, "fo-c": 3}
    # api's pods in fo-b use 90% of their cpu (target 60%): the real HPA scales to its
    # maximum and wants more
    fleet_load(fo_fleet, "PinApp/shop/api", "--cpu", "90%", "--cluster", "fo-b")
    wait_for(lambda: hpa_status(api, "fo-b")
             == (3, "TooManyReplicas"), 240, "fo-b's HPA at its maximum 3, limited", interval=3)
    moved = Pass(fo_fleet, repo, at + 60)
    maxima = hpa_maxima(api)
    assert maxima["fo-b"] == 5 and sum(maxima.values()) == 9, (maxima, moved.lines)
    assert min(maxima["fo-a"], maxima["fo-c"]) >= 1  # each still runs its 1 replica
    scaler = moved.statuses["PinScaler/shop/api"]["rebalance"]
    assert "fo-b ran at its maximum (3/3)" in scaler["reason"]
    assert scaler["maxReplicas"] == maxima
    # the HPA uses the share it got
    wait_for(lambda: hpa_status(api, "fo-b")[0] == 5, 180, "fo-b's HPA to scale to 5", interval=3)
    # the load ends: fo-b no longer wants more, and a new reconciler (state from the host)
    # keeps the moved bounds: nothing to write
    fleet_load(fo_fleet, "PinApp/shop/api", "--reset", "--cluster", "fo-b")
    wait_for(lambda: hpa_status(api, "fo-b")[1] == "", 180, "fo-b's HPA no longer limited",
             interval=3)
    kept = k8s.CustomObjectsApi(api("host")).get_namespaced_custom_object(
        "pincompute.io", "v1", "shop", "pinscalers", "api")["status"].get("rebalance")
    steady = Pass(fo_fleet, repo, at + 120)
    assert hpa_maxima(api) == maxima, (kept, steady.lines)
    assert member_writes(steady) == 0, steady.lines
    cr = k8s.CustomObjectsApi(api("host")).get_namespaced_custom_object(
        "pincompute.io", "v1", "shop", "pinscalers", "api")
    assert cr["status"]["rebalance"]["maxReplicas"] == maxima
