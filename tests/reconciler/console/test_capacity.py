"""The overview's live capacity per member cluster: what ``/api/v1/clusters`` says
(allocatable, requested, used when the metrics API answers), only for whoever may list the
host's clusters, and read once for every page (the watches themselves run against the
fleet in tests/reconciler/insight/test_insight_e2e.py)."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from reconciler.api.access import RateLimits
from reconciler.api.app import Gateway, create_app
from reconciler.api.insight import cluster_views
from reconciler.console.capacity import Capacity, CapacitySnapshots, capacity_panel
from reconciler.console.routes import mount_console
from reconciler.insight.records import Reading
from reconciler.store import Store
from tests.reconciler.console.conftest import FixedMembers, logged_in, status
from tests.reconciler.insight.insight_helpers import (
    FixedInsight,
    cluster_cr,
    metrics,
    node,
    pod,
    reading,
)
from tests.support.api_fakes import Statuses, TablePolicy

EAST = reading("east", [node("n1", cpu="8"), node("n2", cpu="8", ready=False)],
               [pod("a", "shop", cpu="2", node="n1"),
                pod("b", "shop", cpu="1", tier="preemptible", node="n2")],
               usage=[metrics("shop", "a", "500m", "256Mi")])
CENTRAL = reading("central", [node("g1", cpu="4", memory="16Gi")],
                  [pod("c", "shop", node="g1")])  # no metrics API: usage unknown
WEST = Reading("west", 0.0, error="connection refused <script>alert(1)</script>")


def insight() -> FixedInsight:
    return FixedInsight([], [cluster_cr("central"), cluster_cr("east"), cluster_cr("west")],
                        {"central": CENTRAL, "east": EAST, "west": WEST})


def test_each_cluster_shows_requested_of_allocatable_and_what_is_used() -> None:
    panel = capacity_panel(cluster_views(insight()), 0.0)
    assert panel.resources == [("cpu", "CPU"), ("memory", "Memory")]  # no GPU anywhere
    assert panel.clusters["east"] == Capacity(
        requested={"cpu": "3 of 16 (19%)", "memory": "2Gi of 64Gi (3%)"},
        used="cpu 0.5, memory 0.2Gi")
    central = panel.clusters["central"]
    assert (central.requested["cpu"], central.used) == ("1 of 4 (25%)", "")
    assert panel.clusters["west"] == Capacity(
        note="not read: connection refused <script>alert(1)</script>")
    assert panel.read_at == "00:00:00 UTC"


def test_a_gpu_column_when_some_cluster_allocates_gpus() -> None:
    gpu = node("g1")
    gpu["status"]["allocatable"]["nvidia.com/gpu"] = "4"
    source = FixedInsight([], [cluster_cr("gpu")], {"gpu": reading("gpu", [gpu], [])})
    panel = capacity_panel(cluster_views(source), 0.0)
    assert panel.resources[-1] == ("nvidia.com/gpu", "GPUs")
    assert panel.clusters["gpu"].requested["nvidia.com/gpu"] == "0 of 4 (0%)"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    store = Store.open(f"sqlite:///{tmp_path / 'insight.db'}")
    grants = {(user, "list", "PinApp", "shop") for user in ("alice", "ops")}
    grants.add(("ops", "list", "Cluster", ""))
    gateway = Gateway(apps=Statuses({("PinApp", "shop", "web"): status(
                          "Healthy", central="Healthy", east="Healthy", west="Healthy")}),
                      store=store, insight=insight(), limits=RateLimits(qps=1000, burst=1000),
                      access=TablePolicy({"alice-token": "alice", "ops-token": "ops"}, grants))
    app = create_app(gateway)
    mount_console(app, members=FixedMembers())
    yield TestClient(app, base_url="https://console.test", follow_redirects=False)
    store.close()


#: the member panel's health columns after the cluster's name (API server, nodes ready,
#: failover, since, remediation and rotation, nodes with a signal): capacity follows
HEALTH = 6


def member_rows(html: str) -> dict[str, list[str]]:
    table = html[html.index('<table class="members">'):html.index('<p class="summary"')]
    rows = re.findall(r'<tr>\s*<th scope="row">(.*?)</th>(.*?)</tr>', table, re.S)
    return {name: [re.sub(r"<[^>]+>", "", c).strip()
                   for c in re.findall(r"<td[^>]*>(.*?)</td>", cells, re.S)]
            for name, cells in rows}


def test_whoever_may_list_clusters_sees_their_capacity_in_the_member_panel(
        client: TestClient) -> None:
    html = logged_in(client, "ops-token").get("/").text
    assert "CPU requested of allocatable" in html and "capacity read" in html
    rows = member_rows(html)
    assert rows["east"][HEALTH:] == ["3 of 16 (19%)", "2Gi of 64Gi (3%)", "cpu 0.5, memory 0.2Gi"]
    assert rows["central"][HEALTH:] == ["1 of 4 (25%)", "1Gi of 16Gi (6%)", "-"]
    assert rows["west"][HEALTH:HEALTH + 2] == ["-", "-"]
    assert rows["west"][HEALTH + 2].startswith("- not read: connection refused &lt;script&gt;")
    assert "<script>alert" not in html
    refresh = client.get("/", headers={"HX-Request": "true"}).text
    assert member_rows(refresh)["east"][HEALTH] == "3 of 16 (19%)"


def test_a_tenant_sees_the_members_health_but_not_their_capacity(client: TestClient) -> None:
    html = logged_in(client).get("/").text
    rows = member_rows(html)
    assert sorted(rows) == ["central", "east", "west"]
    assert all(len(cells) == HEALTH for cells in rows.values())  # the health columns only
    assert "requested of allocatable" not in html and "of 16" not in html


class Blocking(FixedInsight):
    """Readings wait until ``go`` is set."""

    def __init__(self) -> None:
        super().__init__([], [cluster_cr("east")], {"east": EAST})
        self.go = threading.Event()

    def readings(self, names: Iterable[str]) -> dict[str, Reading]:
        self.go.wait(10)
        return super().readings(names)


def test_pages_share_one_read_at_a_time_and_never_wait_for_a_slow_member() -> None:
    source = Blocking()
    snapshots = CapacitySnapshots(max_age=3600, first_wait=0.01)
    assert [snapshots.panel(source) for _ in range(20)] == [None] * 20  # none waits long
    assert snapshots.reads == 1
    source.go.set()
    snapshots.first_wait = 10
    first = snapshots.panel(source)
    assert first is not None and first.clusters["east"].requested["cpu"] == "3 of 16 (19%)"
    assert all(snapshots.panel(source) is first for _ in range(20))  # reused while fresh
    assert (snapshots.reads, source.asked) == (1, ["east"])
