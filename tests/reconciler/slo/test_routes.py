"""The SLO routes and page: authenticated, then authorized as non-resource URLs on the
host before anything is read or run (a tenant's verify runs no probe), answered from the
store's samples and probes."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry

from pincompile.compiler import compile_path
from reconciler.api.access import RateLimits
from reconciler.api.app import Gateway, create_app
from reconciler.canary.probe import ProbeResult
from reconciler.console.routes import mount_console
from reconciler.slo.console import add_slo_page
from reconciler.slo.serving import SLOService
from reconciler.store import Store
from reconciler.store import verification as kept
from tests.support.api_fakes import Statuses, TablePolicy

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
TOKENS = {"sre-token": "sre", "alice-token": "alice", "reader-token": "reader"}
PATHS = {("sre", "/api/v1/slos"), ("sre", "/api/v1/canary"), ("sre", "POST /api/v1/verify"),
         ("reader", "/api/v1/slos"), ("reader", "/api/v1/canary")}


@pytest.fixture
def service(tmp_path: Path) -> Iterator[SLOService]:
    store = Store.open(f"sqlite:///{tmp_path / 'insight.db'}")
    result = compile_path(EXAMPLES)
    result.sources["pincompile.yaml"] += "canary: {project: platform-system}\n"
    found = SLOService(CollectorRegistry(), lambda: result, kubeconfig=None, identity="serve-a",
                       store=store)
    now = datetime.now(UTC)
    kept.add_samples(store, [kept.SLISample("api-availability", (("group", "workload"),),
                                            now - timedelta(minutes=5), 1000, 1)], "serve-a")
    kept.add_probe(store, kept.ProbeRecord("use1a-general-01", "reserved",
                                           now - timedelta(minutes=3), True, "passed", "", 2.5,
                                           4.0, 20))
    kept.add_probe(store, kept.ProbeRecord("use1a-general-01", "reserved",
                                           now - timedelta(minutes=1), False, "launch",
                                           "0 of 1 pods Ready (1 Pending, not scheduled)",
                                           None, 60.0, 30))
    yield found
    store.close()


@pytest.fixture
def ran(service: SLOService, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    calls: list[Any] = []

    def verify(clusters: Any) -> list[ProbeResult]:
        if "nowhere" in clusters:
            raise ValueError("no member cluster nowhere in the specs")
        calls.append(clusters)
        return [ProbeResult("use1a-general-01", "reserved", datetime.now(UTC), ok=False,
                            stage="launch", message="not scheduled")]

    monkeypatch.setattr(service.canary, "verify", verify)
    return calls


@pytest.fixture
def client(service: SLOService, tmp_path: Path) -> TestClient:
    gateway = Gateway(apps=Statuses({}), store=service.store,  # type: ignore[arg-type]
                      access=TablePolicy(TOKENS, set(), PATHS),
                      limits=RateLimits(qps=1000, burst=1000))
    app = create_app(gateway)
    app.state.slo = service
    mount_console(app)
    add_slo_page(app)
    return TestClient(app, base_url="https://console.test", follow_redirects=False)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_a_tenant_is_refused_before_any_probe_runs(client: TestClient, ran: list[Any]) -> None:
    assert client.get("/api/v1/slos").status_code == 401
    for method, path in (("GET", "/api/v1/slos"), ("GET", "/api/v1/canary"),
                         ("POST", "/api/v1/verify")):
        answer = client.request(method, path, headers=bearer("alice-token"))
        assert answer.status_code == 403, answer.text
    assert client.post("/api/v1/verify", headers=bearer("reader-token")).status_code == 403
    assert ran == []


def test_slos_come_from_the_stores_samples(client: TestClient) -> None:
    answer = client.get("/api/v1/slos", headers=bearer("reader-token"))
    assert answer.status_code == 200, answer.text
    slos = {s["name"]: s for s in answer.json()["slos"]}
    api = slos["api-availability"]
    assert api["events"] == 1000 and api["value"] == pytest.approx(99.9)
    assert api["burnRates"]["1h"] == pytest.approx(1.0) and api["met"] is True
    assert slos["reconcile-latency"]["value"] is None  # no samples: no data, not met


def test_the_canary_route_lists_probes_and_the_policy(client: TestClient) -> None:
    answer = client.get("/api/v1/canary", params={"cluster": "use1a-general-01"},
                        headers=bearer("reader-token")).json()
    assert answer["policy"]["project"] == "platform-system" and answer["scheduled"] is False
    assert [(p["stage"], p["launch_seconds"]) for p in answer["probes"]] == [
        ("passed", 2.5), ("launch", None)]


def test_verify_answers_each_probe_and_ok_false_when_one_failed(client: TestClient,
                                                                  ran: list[Any]) -> None:
    answer = client.post("/api/v1/verify", params={"cluster": "use1a-general-01"},
                         headers=bearer("sre-token"))
    assert answer.status_code == 200, answer.text
    assert answer.json()["ok"] is False and answer.json()["probes"][0]["stage"] == "launch"
    assert ran == [["use1a-general-01"]]
    unknown = client.post("/api/v1/verify", params={"cluster": "nowhere"},
                          headers=bearer("sre-token"))
    assert unknown.status_code == 422 and "nowhere" in unknown.text


def log_in(client: TestClient, token: str) -> None:
    page = client.get("/login").text
    csrf = re.search(r'name="csrf" value="([^"]+)"', page)
    assert csrf
    answer = client.post("/login", data={"token": token, "csrf": csrf.group(1), "next": "/"})
    assert answer.status_code == 303, answer.text


def test_the_console_page_shows_the_slos_and_each_clusters_probes(client: TestClient) -> None:
    log_in(client, "reader-token")
    page = client.get("/slos")
    assert page.status_code == 200, page.text
    assert "api-availability" in page.text and "99.900%" in page.text
    assert '<h3 id="cluster-use1a-general-01">' in page.text
    assert "<polyline class=\"series launch\"" in page.text and "failed-probe" in page.text
    assert "0 of 1 pods Ready (1 Pending, not scheduled)" in page.text


def test_the_console_page_is_refused_to_a_tenant(client: TestClient) -> None:
    log_in(client, "alice-token")
    assert client.get("/slos").status_code == 403
