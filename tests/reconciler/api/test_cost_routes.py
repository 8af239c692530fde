"""``/api/v1/cost`` and ``/api/v1/projects/{project}/cost``, and ``pincompile cost`` through
them: a tenant sees its projects' cost and the idle capacity of the clusters they ran in."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from pincompile.cli import cli
from reconciler.api.access import RateLimits
from reconciler.api.app import Gateway, create_app
from reconciler.api.cost_routes import window
from reconciler.commands.direct import _served
from reconciler.store import Store
from reconciler.store.records import ClusterSample, UsageSample
from reconciler.store.usage import add_usage
from tests.support.api_fakes import Statuses, TablePolicy

GIB = 2**30
NOW = 1_800_003_600.0
T0 = NOW - 3600
PRICES = (0.04, 0.005, 2.0)


def usage(cluster: str, project: str, t: float, cpu: float) -> UsageSample:
    return UsageSample(t, 600.0, cluster, ("PinApp", project, "web"), "reserved", 1,
                       (cpu, GIB, 0.0), (cpu, GIB), (cpu * 0.3, 0.4 * GIB), PRICES, "USD")


def idle(cluster: str, t: float) -> ClusterSample:
    return ClusterSample(t, 600.0, cluster, (10.0, 40 * GIB, 0.0), (2.0, 2 * GIB, 0.0),
                         (2.0, 2 * GIB), (0.6, 0.8 * GIB), PRICES, "USD")


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    store = Store.open(f"sqlite:///{tmp_path / 'insight.db'}")
    times = [T0 + 600 * i for i in range(6)]
    add_usage(store, [usage("east", "shop", t, 2.0) for t in times]
              + [usage("west", "ads", t, 1.0) for t in times],
              [idle(c, t) for c in ("east", "west") for t in times])
    policy = TablePolicy({"alice": "alice", "ops": "ops"},
                         {("alice", "list", "PinApp", "shop"), ("ops", "list", "Cluster", ""),
                          ("ops", "list", "PinApp", "ads"), ("ops", "list", "PinApp", "shop")})
    yield Gateway(apps=Statuses({}), store=store, access=policy,
                  limits=RateLimits(qps=1000, burst=1000))
    store.close()


def get(gateway: Gateway, path: str, token: str, **params: Any) -> Any:
    return TestClient(create_app(gateway)).get(
        f"/api/v1{path}", params=params, headers={"Authorization": f"Bearer {token}"})


def test_a_tenant_sees_its_projects_cost_and_the_idle_of_its_clusters(gateway: Gateway
                                                                      ) -> None:
    until = "2027-01-15T09:00:00Z"  # NOW: the samples end there
    report = get(gateway, "/cost", "alice", since="1h", until=until).json()
    [shop] = report["projects"]
    assert (shop["project"], report["currency"]) == ("shop", "USD")
    assert shop["cost"] == pytest.approx(2 * 0.04 + 0.005)  # 2 cores + 1 GiB for an hour
    assert shop["byTier"] == {"reserved": pytest.approx(0.085)}
    assert shop["efficiency"] == {"cpu": 0.3, "memory": 0.4}
    assert [i["cluster"] for i in report["idle"]] == ["east"]
    assert report["idle"][0]["idleShare"] == pytest.approx((8 * 0.04 + 38 * 0.005)
                                                           / (10 * 0.04 + 40 * 0.005))
    ops = get(gateway, "/cost", "ops", since="1h", until=until).json()
    assert [p["project"] for p in ops["projects"]] == ["shop", "ads"]  # largest first
    assert [i["cluster"] for i in ops["idle"]] == ["east", "west"]


def test_another_projects_cost_is_403_and_a_bad_window_400(gateway: Gateway) -> None:
    assert get(gateway, "/projects/ads/cost", "alice").status_code == 403
    assert get(gateway, "/projects/shop/cost", "alice", since="yesterday").status_code == 400
    one = get(gateway, "/projects/shop/cost", "alice", since="2027-01-15T08:00:00Z",
              until="2027-01-15T09:00:00Z").json()
    assert one["project"] == "shop" and one["apps"][0]["app"] == "PinApp/shop/web"


def test_a_window_is_a_duration_or_a_time_and_bounded() -> None:
    assert window("30m", None, now=NOW) == (NOW - 1800, NOW)
    assert window("1h", "30m", now=NOW) == (NOW - 5400, NOW - 1800)
    assert window("2027-01-15T08:00:00Z", "2027-01-15T09:00:00Z") == (T0, NOW)
    assert window("1000d", None, now=NOW)[0] == NOW - 400 * 86400


def test_the_command_prints_the_report_as_a_table_json_or_csv(gateway: Gateway) -> None:
    with _served(gateway) as url:
        def run(*args: str) -> Any:
            return CliRunner().invoke(cli, ["cost", "--server", url, "--token", "alice",
                                            "--since", "2027-01-15T08:00:00Z", "--until",
                                            "2027-01-15T09:00:00Z", *args],
                                      catch_exceptions=False, env={"COLUMNS": "200"})

        table = run()
        assert table.exit_code == 0, table.output
        lines = table.stdout.splitlines()
        assert lines[2].split() == ["shop", "all", "-", "0.0850", "30%", "40%", "2.00", "1.00"]
        assert lines[-1].split() == ["east", "0.6000", "0.5100", "85%"]
        rows = list(csv.DictReader(io.StringIO(run("-o", "csv").stdout)))
        assert [(r["row"], r["project"], r["cluster"]) for r in rows] == [
            ("app", "shop", ""), ("idle", "", "east")]
        assert float(rows[0]["cost"]) == pytest.approx(0.085)
        assert json.loads(run("-o", "json", "-p", "shop").stdout)["projects"][0]["cost"] \
            == pytest.approx(0.085)
        assert run("-p", "ads").exit_code == 3  # 403: not hers
