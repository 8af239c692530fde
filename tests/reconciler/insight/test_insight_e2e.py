"""Cost attribution on the fleet: two projects run known requests in a real member cluster
for a known minute, sampled as serve samples them (nodes, pods and quotas LISTed from its
API server, usage from its real metrics-server); the API attributes to each project what
its requests cost at its tier's prices, within 1 %, and reports the usage metrics-server
measured; the same samples give a forecast."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from pincompile.cli import cli
from reconciler.api.access import RateLimits
from reconciler.api.app import Gateway, create_app
from reconciler.clock import iso_time
from reconciler.commands.direct import _served
from reconciler.fleet import fleet as fleet_mod
from reconciler.fleet.clusters import ClusterSpec
from reconciler.fleet.nodes import GPU, parse_quantity
from reconciler.insight.live import read_member
from reconciler.insight.records import Reading
from reconciler.insight.sampler import UsageSampler
from reconciler.insight.views import cluster_view
from reconciler.model import Obj
from reconciler.store import Store
from tests.support.api_fakes import Statuses, TablePolicy
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e
Kube = Callable[[str], Any]

PRICES: dict[str, Any] = {"currency": "USD", "reserved": {"cpu": 0.06, "memory": 0.008},
                          "ondemand": {"cpu": 0.04, "memory": 0.005},
                          "preemptible": {"cpu": 0.01}}
PROJECTS = {  # namespace: tier, pods, cpu and memory each pod requests
    "cost-e2e-a": ("reserved", 2, 0.5, 0.5),
    "cost-e2e-b": ("ondemand", 3, 0.25, 0.25),
}
STEP, SAMPLES = 10.0, 6


def general_cluster(specs: dict[str, ClusterSpec]) -> ClusterSpec:
    for spec in specs.values():
        if spec.schedulable and parse_quantity(spec.capacity.get(GPU, "0")) == 0:
            return spec
    pytest.skip("the fleet has no schedulable general cluster")


class Member:
    """serve's insight source for one member cluster, its Cluster resource priced."""

    def __init__(self, spec: ClusterSpec, kubeconfig: str) -> None:
        self.spec, self.kubeconfig = spec, kubeconfig
        self.cr: Obj = {"metadata": {"name": spec.name},
                        "spec": {"context": spec.context, "capacity": dict(spec.capacity),
                                 "prices": PRICES}}

    def projects(self) -> list[Obj]:
        return []

    def clusters(self) -> list[Obj]:
        return [self.cr]

    def readings(self, names: Iterable[str]) -> dict[str, Reading]:
        return {n: read_member(n, self.spec.context, self.kubeconfig) for n in names}


@pytest.fixture(scope="module")
def running(fleet: fleet_mod.FleetState, fleet_specs: dict[str, ClusterSpec],
            kube: Kube) -> Iterator[ClusterSpec]:
    """The projects' pods Running in a member cluster, metrics-server measuring them."""
    from kubernetes import client

    cluster = general_cluster(fleet_specs)
    core: Any = client.CoreV1Api(kube(cluster.context))
    custom: Any = client.CustomObjectsApi(kube(cluster.context))
    for namespace, (tier, pods, cpu, memory) in PROJECTS.items():
        core.create_namespace({"metadata": {"name": namespace}})
        for i in range(pods):
            core.create_namespaced_pod(namespace, {
                "metadata": {"name": f"web-{i}", "labels": {
                    "pincompute.io/project": namespace, "pincompute.io/app": "web",
                    "pincompute.io/kind": "PinApp", "pincompute.io/tier": tier}},
                "spec": {"containers": [{
                    "name": "main", "image": "registry.internal/e2e/web:1.0",
                    "resources": {"requests": {"cpu": f"{int(cpu * 1000)}m",
                                               "memory": f"{int(memory * 1024)}Mi"}}}]}})
    try:
        for namespace, (_, pods, _, _) in PROJECTS.items():
            wait_for(lambda ns=namespace, n=pods: sum(
                p.status.phase == "Running" for p in core.list_namespaced_pod(ns).items) == n,
                90, f"{namespace}'s pods to run")
            wait_for(lambda ns=namespace, n=pods: len(
                custom.list_namespaced_custom_object("metrics.k8s.io", "v1beta1", ns,
                                                     "pods")["items"]) == n,
                120, f"metrics of {namespace}'s pods")
        yield cluster
    finally:
        for namespace in PROJECTS:
            core.delete_namespace(namespace)


def test_two_projects_are_charged_their_requests_at_their_tiers_prices(
        running: ClusterSpec, fleet: fleet_mod.FleetState, tmp_path: Path) -> None:
    source = Member(running, str(fleet.kubeconfig))
    store = Store.open(f"sqlite:///{tmp_path / 'insight.db'}")
    sampler = UsageSampler(source, store, interval=STEP)
    t0 = math.ceil(time.time() / STEP) * STEP
    for i in range(SAMPLES):  # as serve samples: at the start of each interval
        time.sleep(max(0.0, t0 + i * STEP - time.time()))
        assert sampler.sample(at=t0 + i * STEP) >= len(PROJECTS) + 1
    gateway = Gateway(apps=Statuses({}), store=store, insight=source,
                      access=TablePolicy({"ops": "ops"}, {("ops", "list", "Cluster", ""),
                                                          *(("ops", "list", "PinApp", p)
                                                            for p in PROJECTS)}),
                      limits=RateLimits(qps=1000, burst=1000))
    api = TestClient(create_app(gateway))
    window = {"since": iso_time(t0), "until": iso_time(t0 + SAMPLES * STEP)}
    hours = SAMPLES * STEP / 3600
    for namespace, (tier, pods, cpu, memory) in PROJECTS.items():
        got = api.get(f"/api/v1/projects/{namespace}/cost", params=window,
                      headers={"Authorization": "Bearer ops"}).json()
        prices = PRICES[tier]
        expected = pods * (cpu * prices["cpu"] + memory * prices["memory"]) * hours
        print(f"{namespace}: attributed {got['cost']:.6f}, expected {expected:.6f} "
              f"({(got['cost'] - expected) / expected:+.3%}); efficiency {got['efficiency']}")
        assert got["cost"] == pytest.approx(expected, rel=0.01), got
        assert list(got["byTier"]) == [tier]
        # what the real metrics-server measured: the fleet's pods use 30% of their cpu
        # request and 40% of their memory request
        assert got["efficiency"]["cpu"] == pytest.approx(0.3, rel=0.15), got
        assert got["efficiency"]["memory"] == pytest.approx(0.4, rel=0.15), got
        [idle] = got["idle"]
        allocatable = (float(parse_quantity(running.capacity["cpu"])) * 0.04
                       + float(parse_quantity(running.capacity["memory"])) / 2**30 * 0.005)
        assert idle["capacityCost"] == pytest.approx(allocatable * hours, rel=0.01)
        assert 0 < idle["idleShare"] < 1
    forecast = api.get("/api/v1/forecast", params={"since": window["since"], "bucket": "10s"},
                       headers={"Authorization": "Bearer ops"}).json()
    made = {(p["project"], s["measure"], s["resource"]): s["model"]["points"]
            for p in forecast["projects"] for s in p["series"]}
    assert made[("cost-e2e-a", "requested", "cpu")] >= SAMPLES - 1
    assert forecast["clusters"], forecast
    live = cluster_view(source.cr, source.readings([running.name])[running.name])
    assert float(parse_quantity(live["requestedByTier"]["reserved"]["cpu"])) >= 1.0
    commands(gateway, running.name, window)
    store.close()


def commands(gateway: Gateway, cluster: str, window: dict[str, str]) -> None:
    """The commands docs/capacity.md shows, through the API these samples feed."""
    with _served(gateway) as url:
        def run(*args: str) -> list[str]:
            done = CliRunner().invoke(cli, [*args, "--server", url, "--token", "ops"],
                                      catch_exceptions=False, env={"COLUMNS": "250"})
            assert done.exit_code == 0, done.output
            return done.stdout.splitlines()

        cost = run("cost", "-p", "cost-e2e-a", "--since", window["since"], "--until",
                   window["until"])
        assert cost[2].split()[:3] == ["cost-e2e-a", "all", "-"], cost
        assert any(line.split()[:1] == [cluster] for line in cost), cost  # its idle share
        csv_lines = run("cost", "--since", window["since"], "--until", window["until"],
                        "-o", "csv")
        assert len(csv_lines) >= 1 + len(PROJECTS) + 1, csv_lines
        forecast = run("capacity", "--forecast", "--since", window["since"], "--bucket",
                       "10s")
        assert any(line.split()[:2] == ["cost-e2e-b", "ondemand"] for line in forecast)
        live = run("capacity", "--live")
        assert any(line.split()[:1] == [cluster] for line in live), live
