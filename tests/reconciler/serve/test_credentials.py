"""A repository URL with credentials (``https://user:TOKEN@host/r.git``): serve fetches with
them (the test's git server refuses a fetch without them), and they appear nowhere serve
writes -- stderr, ``/status``, ``/metrics``, the audit log, Event texts -- neither while
passes succeed nor when a fetch fails."""

from __future__ import annotations

import base64
import functools
import json
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from reconciler.model import ClusterReport, PassReport
from reconciler.serve.audit import record_for
from reconciler.serve.redact import redact
from tests.support.serve import ServeProcess, SpecRepo, git, http, serve_status
from tests.support.wait import wait_for

TOKEN = "ghp_s3cretT0ken"
USER = "ci-bot"


class BasicAuthFiles(SimpleHTTPRequestHandler):
    """Files, to a client that sends USER:TOKEN with Basic authentication only."""

    def do_GET(self) -> None:
        expected = "Basic " + base64.b64encode(f"{USER}:{TOKEN}".encode()).decode()
        if self.headers.get("Authorization") != expected:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        super().do_GET()

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def git_http(spec_repo: SpecRepo) -> Iterator[str]:
    """The bare repository over git's "dumb" HTTP on 127.0.0.1, behind Basic auth."""
    git(spec_repo.bare, "update-server-info")
    handler = functools.partial(BasicAuthFiles, directory=str(spec_repo.bare.parent))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_token_reaches_no_output(spec_repo: SpecRepo, git_http: str, tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    serve = ServeProcess(f"http://{USER}:{TOKEN}@{git_http}/platform.git",
                         tmp_path / "passes.jsonl", "--no-leader-election", "--no-events",
                         "--resync", "1s", "--audit-log", str(audit))
    try:
        wait_for(lambda: serve.passes("applied"), 120, "a pass fetched with it")
        first = serve_status(serve.base)
        assert first["repo"] == f"http://{git_http}/platform.git"
        spec_repo.bare.rename(spec_repo.bare.with_name("moved.git"))
        failed = wait_for(lambda: (s := serve_status(serve.base))["lastPass"]["outcome"]
                          == "fetch-failed" and s, 60, "a failed fetch")
        assert f"git fetch http://{git_http}/platform.git main failed" in \
            failed["lastPass"]["error"]
        outputs = {"stderr": serve.log.read_text(),
                   "/status": http("GET", f"{serve.base}/status")[1].decode(),
                   "/metrics": http("GET", f"{serve.base}/metrics")[1].decode(),
                   "audit log": audit.read_text()}
    finally:
        serve.stop()
    assert [json.loads(line)["outcome"] for line in outputs["audit log"].splitlines()][-1] \
        == "fetch-failed"
    assert 'pincompile_serve_pass_errors_total{stage="fetch"}' in outputs["/metrics"]
    for where, text in outputs.items():
        assert TOKEN not in text and f"{USER}:" not in text, f"the token leaked to {where}"


def test_event_texts_carry_no_token() -> None:
    """An Event's message is the record's summary, its annotation the record's JSON."""
    url = f"https://{USER}:{TOKEN}@git.internal/platform.git"
    report = PassReport(revision="a" * 40, error=f"git fetch {url} main failed: 403")
    report.clusters["c1"] = ClusterReport("c1", error=f"cannot reach {url}")
    record = record_for(report, author="a", subject=f"pin {url}", trigger="push",
                        stage="fetch")
    for text in (record.summary(), record.to_json()):
        assert TOKEN not in text and "git.internal/platform.git" in text


@pytest.mark.parametrize(("text", "shown"), [
    ("https://u:t@host/r.git", "https://host/r.git"),
    ("fatal: 'http://tok@10.0.0.1:8080/x' said 403", "fatal: 'http://10.0.0.1:8080/x' said 403"),
    ("ssh://git@host/r.git and https://a:b@c@host/r", "ssh://host/r.git and https://host/r"),
    ("git@host:r.git, no scheme, no secret", "git@host:r.git, no scheme, no secret"),
    ("fetch https://host/r.git?access_token=QSECRET&ref=main failed",
     "fetch https://host/r.git?access_token=<redacted>&ref=<redacted> failed"),
    ("https://u:t@host/r?private_token=T#frag", "https://host/r?private_token=<redacted>#frag"),
])
def test_redact_removes_userinfo_and_query_values_from_urls_in_text(text: str, shown: str) -> None:
    assert redact(text) == shown
