"""``/status`` and ``/metrics`` list every project's apps, placement and errors: closed by
default to anyone the host cluster does not authorize for the path (or who lacks the
status token), open to all only with --open-status; /healthz and /readyz stay open."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from reconciler.api.access import RateLimits
from reconciler.api.app import Gateway
from reconciler.serve.status_access import StatusAccess
from reconciler.store import Store
from tests.support.api_fakes import Statuses, TablePolicy
from tests.support.serve import http

Start = Callable[..., str]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def gateway(tmp_path: Path) -> Gateway:
    policy = TablePolicy({"prometheus-token": "system:serviceaccount:monitoring:prometheus",
                          "alice-token": "alice", "ops-token": "ops"},
                         {("alice", "list", "PinApp", "shop")},
                         paths={("system:serviceaccount:monitoring:prometheus", "/metrics"),
                                ("ops", "/status"), ("ops", "/metrics")})
    return Gateway(apps=Statuses({}), store=Store.open(f"sqlite:///{tmp_path / 'i.db'}"),
                   access=policy, limits=RateLimits(1000, 1000))


def test_by_default_an_anonymous_client_reads_neither_status_nor_metrics(
        http_server: Start) -> None:
    base = http_server()
    for path in ("/status", "/metrics"):
        status, body = http("GET", f"{base}{path}")
        assert status == 401 and b"Bearer" in body and b"apps" not in body
        assert http("GET", f"{base}{path}", headers=bearer("guess"))[0] == 401
    assert http("GET", f"{base}/healthz")[0] == 200
    assert http("GET", f"{base}/readyz")[0] == 503  # open: it says why it is not ready


def test_the_host_clusters_rbac_says_who_reads_status_and_metrics(
        http_server: Start, tmp_path: Path) -> None:
    base = http_server(gateway(tmp_path))
    prometheus = bearer("prometheus-token")
    assert http("GET", f"{base}/metrics", headers=prometheus)[0] == 200
    status, body = http("GET", f"{base}/status", headers=prometheus)
    assert status == 403 and b"nonResourceURLs" in body
    assert http("GET", f"{base}/status", headers=bearer("ops-token"))[0] == 200
    for path in ("/status", "/metrics"):  # a tenant of a project, and an unknown token
        assert http("GET", f"{base}{path}", headers=bearer("alice-token"))[0] == 403
        assert http("GET", f"{base}{path}", headers=bearer("made-up"))[0] == 401
        assert http("GET", f"{base}{path}")[0] == 401


def test_open_status_opens_both_to_anyone(http_server: Start, tmp_path: Path) -> None:
    base = http_server(gateway(tmp_path), status=StatusAccess(open=True))
    assert http("GET", f"{base}/status")[0] == 200
    assert http("GET", f"{base}/metrics")[0] == 200
