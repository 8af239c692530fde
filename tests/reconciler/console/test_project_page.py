"""The console's project page (``/projects/PROJECT``) without a browser: its cost per tier
and app and its efficiency are the API's numbers for the same window, its forecast says
when the quota runs out, another project is a 403 page before anything is summed, and
every tenant-controlled value is escaped."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from html import unescape as html_unescape
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from reconciler.api.access import RateLimits
from reconciler.api.app import Gateway, create_app
from reconciler.console import projectpage
from reconciler.console.projectpage import APPS_SHOWN, app_path, project_page
from reconciler.console.routes import mount_console
from reconciler.store import Store
from reconciler.store.records import ClusterSample, UsageSample
from reconciler.store.usage import add_usage
from tests.reconciler.console.conftest import logged_in, status
from tests.reconciler.insight.insight_helpers import FixedInsight, project_cr
from tests.support.api_fakes import Statuses, TablePolicy

GIB = 2**30
HOUR, DAY = 3600.0, 86400.0
END = time.time() // HOUR * HOUR  # the samples end at the last full hour
START = END - 4 * DAY
PRICES = (0.04, 0.005, 2.0)
HOSTILE = '<img src=x onerror="alert(1)">'
ODD = 'x"><b>y'
"""A project name Kubernetes refuses (a namespace is a DNS label): escaped all the same."""


def cores(t: float) -> float:
    """Shop/web's requested cores: 4, growing by 1 a day."""
    return 4.0 + (t - START) / DAY


def sample(project: str, name: str, t: float, cpu: float) -> UsageSample:
    """An hour of one app in east: ``cpu`` cores and 1 GiB requested, 30 % and 40 % used."""
    return UsageSample(t, HOUR, "east", ("PinApp", project, name), "reserved", 1,
                       (cpu, GIB, 0.0), (cpu, GIB), (0.3 * cpu, 0.4 * GIB), PRICES, "USD")


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    store = Store.open(f"sqlite:///{tmp_path / 'insight.db'}")
    hours = [START + HOUR * i for i in range(96)]
    add_usage(store, [sample("shop", "web", t, cores(t)) for t in hours]
              + [sample("shop", HOSTILE, t, 1.0) for t in hours]
              + [sample("ads", "web", t, 3.0) for t in hours],
              [ClusterSample(t, HOUR, "east", (64.0, 256 * GIB, 0.0), (1.0, GIB, 0.0),
                             (1.0, GIB), (0.3, 0.4 * GIB), PRICES, "USD") for t in hours])
    insight = FixedInsight([project_cr("shop", {"reserved": {"cpu": "20", "memory": "8Gi"}})],
                           [], {})
    grants = {("alice", "list", "PinApp", "shop"), ("alice", "read", "PinApp", "shop"),
              ("alice", "list", "PinApp", "quiet"), ("alice", "list", "PinApp", ODD)}
    yield Gateway(apps=Statuses({("PinApp", p, "web"): status("Healthy", east="Healthy")
                                 for p in ("shop", "ads", ODD)}),
                  store=store, insight=insight, limits=RateLimits(qps=1000, burst=1000),
                  access=TablePolicy({"alice-token": "alice", "dave-token": "dave"}, grants))
    store.close()


@pytest.fixture
def client(gateway: Gateway) -> TestClient:
    app = create_app(gateway)
    mount_console(app)
    return TestClient(app, base_url="https://console.test", follow_redirects=False)


def cells(html: str, caption: str) -> list[list[str]]:
    """The text of each body row of the table captioned ``caption`` (unescaped)."""
    table = html[html.index(f"<caption>{caption}"):]
    body = table[table.index("<tbody>"):table.index("</tbody>")]
    return [[html_unescape(re.sub(r"<[^>]+>", "", c).strip())
             for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)]


def fact(html: str, ident: str) -> str:
    found = re.search(rf'<dd id="{ident}">([^<]*)</dd>', html)
    assert found, ident
    return found.group(1)


def test_the_page_shows_the_apis_cost_per_tier_and_app_and_the_efficiency(
        client: TestClient) -> None:
    api = client.get("/api/v1/projects/shop/cost", params={"since": "5d"},
                     headers={"Authorization": "Bearer alice-token"}).json()
    page = logged_in(client).get("/projects/shop", params={"since": "5d"})
    assert page.status_code == 200
    html = page.text
    # each hour: cores(t) plus 1 core, each app with 1 GiB, at 0.04 and 0.005 (charged the
    # requests: the pods use less)
    expected = sum(0.04 * (cores(START + HOUR * i) + 1) + 2 * 0.005 for i in range(96))
    assert api["cost"] == pytest.approx(expected, rel=1e-6)
    assert fact(html, "project-cost") == f"{api['cost']:,.2f} USD"
    assert (fact(html, "efficiency-cpu"), fact(html, "efficiency-memory")) == ("30%", "40%")
    assert cells(html, "Cost per tier") == [["reserved", f"{api['byTier']['reserved']:,.2f}"]]
    apps = cells(html, "Cost per app")
    assert [row[:3] for row in apps] == [
        ["PinApp/shop/web", "reserved", f"{api['apps'][0]['cost']:,.2f}"],
        [f"PinApp/shop/{HOSTILE}", "reserved", f"{api['apps'][1]['cost']:,.2f}"]]
    assert apps[0][3:5] == ["30%", "40%"]
    assert cells(html, "Idle capacity")[0][0] == "east"
    assert "ads" not in html


def test_every_tenant_controlled_value_is_escaped_and_quoted_in_links(
        client: TestClient) -> None:
    html = logged_in(client).get("/projects/shop").text
    assert HOSTILE not in html and "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;" in html
    assert f'href="{app_path("PinApp/shop/" + HOSTILE)}"' in html
    assert app_path("PinApp/shop/" + HOSTILE) == \
        "/apps/PinApp/shop/%3Cimg%20src%3Dx%20onerror%3D%22alert%281%29%22%3E"
    echoed = client.get("/projects/shop", params={"since": f"{HOSTILE}5d"}).text
    assert HOSTILE not in echoed and 'value="&lt;img src=x onerror=&#34;' in echoed
    refused = client.get("/projects/shop", params={"since": "<b>last week</b>"})
    assert refused.status_code == 400 and "<b>" not in refused.text


def test_the_forecast_says_when_the_quota_runs_out_at_the_trend(client: TestClient) -> None:
    html = logged_in(client).get("/projects/shop", params={"since": "5d"}).text
    rows = {(r[0], r[1], r[2]): r for r in cells(html, "Requested and used per tier")}
    cpu = rows[("reserved", "cpu (cores)", "requested")]
    assert (cpu[4], cpu[5], cpu[6]) == ("+1.00", "daily", "20.0")
    # 5 cores at START (web's 4 and the other app's 1), a core more a day: 20 after 15 days
    crossing = datetime.fromtimestamp(START + 15 * DAY + HOUR, UTC)
    assert cpu[7].startswith(f"{crossing:%Y-%m-%d %H:%M} (in ")
    assert rows[("reserved", "memory (GiB)", "requested")][7] == "not within the horizon"


def test_another_project_is_a_403_page_before_anything_is_summed(
        client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    def spent(*_: Any) -> None:
        raise AssertionError("the store was read for a caller who may not see the project")

    monkeypatch.setattr(projectpage, "_documents", spent)
    logged_in(client)
    for project in ("ads", HOSTILE):
        answer = client.get(f"/projects/{project}")
        assert answer.status_code == 403 and "alice may not list apps in project" in answer.text
        assert HOSTILE not in answer.text
    assert logged_in(client, "dave-token").get("/projects/shop").status_code == 403
    client.cookies.clear()
    anonymous = client.get("/projects/shop", params={"since": "7d"})
    assert (anonymous.status_code, anonymous.headers["location"]) == (
        303, "/login?next=%2Fprojects%2Fshop%3Fsince%3D7d")


def test_a_window_without_samples_says_so(client: TestClient) -> None:
    html = logged_in(client).get("/projects/quiet").text
    assert "No samples of project quiet in this window." in html
    assert "Not enough samples in this window to fit a trend." in html


def test_the_overview_and_the_app_page_link_to_the_project_page(client: TestClient) -> None:
    overview = logged_in(client).get("/").text
    nav = overview[overview.index('<nav class="projects"'):overview.index("</nav>")]
    assert re.findall(r'href="([^"]+)"', nav) == ["/projects/shop", "/projects/x%22%3E%3Cb%3Ey"]
    assert "x&#34;&gt;&lt;b&gt;y</a>" in nav and ODD not in overview
    app = client.get("/apps/PinApp/shop/web").text
    assert 'Breadcrumb"><a href="/">Apps</a> \u203a <a href="/projects/shop"' in app


def document(apps: int) -> dict[str, Any]:
    def app(i: int) -> dict[str, Any]:
        hours = {"cpuCoreHours": 1.0, "memoryGiBHours": 2.0}
        return {"app": f"PinApp/shop/a{i}", "tier": "ondemand", "cost": 1.0 / (i + 1),
                "costByResource": {}, "requested": hours, "used": hours,
                "efficiency": {"cpu": None, "memory": 0.5}, "unpricedHours": 0.0}

    return {"project": "shop", "since": "s", "until": "u", "currency": "", "cost": 2.5,
            "byTier": {"ondemand": 2.5}, "apps": [app(i) for i in range(apps)], "idle": []}


FORECAST = {"since": "s", "until": "2027-01-01T00:00:00Z", "bucketSeconds": 3600.0,
            "horizonDays": 90.0, "model": "m", "projects": [], "clusters": None}


def test_the_page_lists_the_costliest_apps_and_counts_the_rest() -> None:
    page = project_page(document(APPS_SHOWN + 5), FORECAST)
    assert len(page.apps) == APPS_SHOWN and page.more_apps == 5
    assert page.apps[0].app == "PinApp/shop/a0" and page.apps[0].cost == "1.00"
    assert (page.apps[0].cpu, page.apps[0].memory) == ("-", "50%")  # cpu not measured
    assert page.efficiency == ("-", "-") and page.forecast == []
    assert project_page(document(3), FORECAST).more_apps == 0
