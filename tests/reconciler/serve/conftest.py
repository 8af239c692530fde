"""Fixtures for serve's tests: a real bare repository of the example specs, and serve's
HTTP server alone."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_runner import Recorder

from reconciler.api.app import Gateway
from reconciler.serve.metrics import Metrics
from reconciler.serve.mirror import Mirror
from reconciler.serve.server import HTTPLimits, ServeHTTPServer, WebhookConfig
from reconciler.serve.service import Service
from reconciler.serve.status_access import StatusAccess
from tests.support.serve import SpecRepo, http, wait_for


@pytest.fixture
def spec_repo(tmp_path: Path) -> SpecRepo:
    return SpecRepo(tmp_path)


@pytest.fixture
def http_server(spec_repo: SpecRepo, tmp_path: Path) -> Iterator[Callable[..., str]]:
    """Starts serve's HTTP server alone (no pass runs) with the given API gateway and
    limits, on a real socket; its base URL."""
    servers: list[ServeHTTPServer] = []

    def start(gateway: Gateway | None = None, *, status: StatusAccess | None = None,
              **limits: Any) -> str:
        mirror = Mirror(str(spec_repo.bare), "main", tmp_path / f"mirror-{len(servers)}")
        service = Service(mirror, Recorder(), Metrics())
        server = ServeHTTPServer(("127.0.0.1", 0), service, WebhookConfig(None, "main"),
                                 str(spec_repo.bare), gateway=gateway, status=status,
                                 limits=HTTPLimits(**limits))
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        host, port = server.server_address
        base = f"http://{host}:{port}"
        wait_for(lambda: http("GET", f"{base}/healthz")[0] == 200, timeout=30)
        return base

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()
