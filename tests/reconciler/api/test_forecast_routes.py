"""``/api/v1/forecast`` and ``pincompile capacity --forecast``: a project's requests at
their trend cross its quota on the day the samples say; the clusters to whoever may list
them."""

from __future__ import annotations

from collections.abc import Iterator
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
from reconciler.store import Store
from reconciler.store.records import ClusterSample, UsageSample
from reconciler.store.usage import add_usage
from tests.reconciler.insight.insight_helpers import FixedInsight, project_cr
from tests.support.api_fakes import Statuses, TablePolicy

GIB = 2**30
HOUR, DAY = 3600.0, 86400.0
END = 1_800_000_000.0 // DAY * DAY  # midnight
START = END - 4 * DAY


def cores(t: float) -> float:
    """Requested cores: 4, growing by 1 a day (so 20 cores 16 days after START)."""
    return 4.0 + (t - START) / DAY


@pytest.fixture
def gateway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Gateway]:
    monkeypatch.setattr("time.time", lambda: END)
    store = Store.open(f"sqlite:///{tmp_path / 'insight.db'}")
    hours = [START + HOUR * i for i in range(96)]
    add_usage(store, [UsageSample(t, HOUR, "east", ("PinApp", p, "web"), "reserved", 1,
                                  (cores(t), GIB, 0.0), (cores(t), GIB), (1.0, GIB), None)
                      for t in hours for p in ("shop", "ads")],
              [ClusterSample(t, HOUR, "east", (64.0, 256 * GIB, 0.0), (2 * cores(t), GIB, 0),
                             (2 * cores(t), GIB), None, None) for t in hours])
    insight = FixedInsight([project_cr("shop", {"reserved": {"cpu": "20", "memory": "8Gi"}})],
                           [], {})
    policy = TablePolicy({"alice": "alice", "ops": "ops"},
                         {("alice", "list", "PinApp", "shop"), ("ops", "list", "Cluster", ""),
                          ("ops", "list", "PinApp", "ads"), ("ops", "list", "PinApp", "shop")})
    yield Gateway(apps=Statuses({}), store=store, access=policy, insight=insight,
                  limits=RateLimits(qps=1000, burst=1000))
    store.close()


def get(gateway: Gateway, path: str, token: str, **params: Any) -> Any:
    return TestClient(create_app(gateway)).get(
        f"/api/v1{path}", params=params, headers={"Authorization": f"Bearer {token}"})


def test_the_quota_runs_out_when_the_trend_reaches_it(gateway: Gateway) -> None:
    report = get(gateway, "/forecast", "alice", since="4d").json()
    assert report["clusters"] is None  # alice may not list clusters
    [shop] = report["projects"]
    requested = {(s["resource"], s["measure"]): s for s in shop["series"]}
    cpu = requested[("cpu", "requested")]
    assert (cpu["limit"], cpu["model"]["trendPerDay"], cpu["model"]["seasonality"]) == (
        20.0, 1.0, "daily")
    # 20 cores is reached 16 days after START, 12 after the last hour: the first hour over
    assert cpu["runsOut"] == iso_time(START + 16 * DAY + HOUR)
    assert requested[("memory", "requested")]["runsOut"] is None  # 1 GiB of 8, flat
    assert requested[("cpu", "used")]["limit"] is None


def test_the_clusters_are_forecast_for_whoever_may_list_them(gateway: Gateway) -> None:
    report = get(gateway, "/forecast", "ops", since="4d").json()
    assert [p["project"] for p in report["projects"]] == ["ads", "shop"]
    [cpu] = [c for c in report["clusters"] if c["resource"] == "cpu"]
    assert (cpu["cluster"], cpu["limit"]) == ("east", 64.0)
    assert cpu["runsOut"] == iso_time(START + 28 * DAY + HOUR)  # 2 x cores(t) > 64


def test_bounds_and_access(gateway: Gateway) -> None:
    assert get(gateway, "/projects/ads/forecast", "alice").status_code == 403
    assert get(gateway, "/forecast", "alice", bucket="1s").status_code == 400
    assert get(gateway, "/forecast", "alice", since="300d", bucket="10s").status_code == 400


def test_the_command_prints_when_quota_runs_out(gateway: Gateway) -> None:
    with _served(gateway) as url:
        result = CliRunner().invoke(cli, ["capacity", "--forecast", "--since", "4d",
                                          "--server", url, "--token", "alice"],
                                    catch_exceptions=False, env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    rows = [line.split() for line in result.stdout.splitlines()[1:]]
    assert rows[1][:8] == ["shop", "reserved", "cpu", "(cores)", "requested", "7.96",
                           "+1.00", "daily"]
    assert rows[1][8:] == ["20.0", "2027-01-27", "01:00", "(in", "12", "days)"]
