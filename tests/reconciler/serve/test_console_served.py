"""`serve` serves the web console on its HTTP address: the login page, the vendored
assets, and, with no host cluster to check tokens against, a 503 page (never a traceback)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_runner import Recorder

from reconciler.serve.app import ServeApp, ServeOptions
from tests.support.serve import SpecRepo, http


@pytest.fixture
def base(spec_repo: SpecRepo, tmp_path: Path) -> Iterator[str]:
    app = ServeApp(ServeOptions(
        repo=str(spec_repo.bare), listen="127.0.0.1:0", secret=b"s", resync=600.0,
        leader_election=False, events=False, audit_log=tmp_path / "audit.jsonl",
        shutdown_timeout=10.0, app_status=False), Recorder())
    app.start()
    try:
        host, port = app.address
        yield f"http://{host}:{port}"
    finally:
        app.stop()


def test_serve_answers_the_console_pages_and_assets(base: str) -> None:
    status, page = http("GET", f"{base}/login")
    assert status == 200 and b'<label for="token">Bearer token</label>' in page
    status, script = http("GET", f"{base}/static/htmx.min.js")
    assert status == 200 and len(script) > 10_000
    status, page = http("GET", f"{base}/")
    assert status == 503 and b"the console needs the host cluster" in page
    assert http("GET", f"{base}/healthz")[0] == 200
