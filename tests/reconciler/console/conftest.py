"""A console on the API's app with a table of tokens and grants (the host's TokenReview and
SubjectAccessReview are exercised against a real API server in test_browser_e2e.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from reconciler.api.access import RateLimits
from reconciler.api.app import Gateway, create_app
from reconciler.console.routes import mount_console
from reconciler.store import Store
from tests.support.api_fakes import Statuses, TablePolicy


def status(phase: str, **clusters: str) -> dict[str, Any]:
    """An app's status with ``cluster=phase`` entries, two replicas in each."""
    return {"phase": phase, "ready": f"{2 * len(clusters)}/{2 * len(clusters)}",
            "clusters": [{"name": c, "phase": p, "replicas": 2, "readyReplicas": 2}
                         for c, p in clusters.items()],
            "lastAppliedRevision": "0123456789abcdef"}


def fleet_statuses() -> dict[tuple[str, str, str], Mapping[str, Any]]:
    apps: dict[tuple[str, str, str], Mapping[str, Any]] = {
        ("PinApp", "shop", f"web-{i:03}"): status("Healthy", east="Healthy", west="Healthy")
        for i in range(120)}
    apps[("PinApp", "shop", "cart")] = {
        **status("Degraded", east="Healthy", west="Degraded"),
        "message": "Deployment/shop/cart in west: <script>alert(1)</script>",
        "rollout": {"phase": "Halted", "message": "zone b unhealthy",
                    "zones": ["a", "b", "c"], "zoneIndex": 1}}
    apps[("PinterestService", "shop", "api")] = status("Progressing", central="Progressing")
    apps[("PinApp", "ads", "secret")] = status("Healthy", east="Healthy")
    return apps


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store.open(f"sqlite:///{tmp_path / 'insight.db'}")
    yield opened
    opened.close()


@pytest.fixture
def console(store: Store) -> TestClient:
    grants = {("alice", action, kind, "shop") for action in ("list", "read")
              for kind in ("PinApp", "PinterestService")}
    gateway = Gateway(apps=Statuses(fleet_statuses()), store=store,
                      access=TablePolicy({"alice-token": "alice"}, grants),
                      limits=RateLimits(qps=1000, burst=1000))
    app = create_app(gateway)
    mount_console(app)
    return TestClient(app, base_url="https://console.test", follow_redirects=False)


def csrf(client: TestClient, path: str = "/login") -> str:
    """The CSRF value of a page's forms (the page also sets its cookie)."""
    found = re.search(r'name="csrf" value="([^"]+)"', client.get(path).text)
    assert found, "the page has no CSRF field"
    return found.group(1)


def logged_in(client: TestClient, token: str = "alice-token") -> TestClient:
    answer = client.post("/login", data={"token": token, "csrf": csrf(client), "next": "/"})
    assert answer.status_code == 303, answer.text
    return client
