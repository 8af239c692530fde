"""The cluster client's pure parts: request classification, retries, rate limit, a
connection pool for every thread, and a server that is not Kubernetes said as such."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from reconciler.clients.connect import (
    ClusterUnreachable,
    RequestStats,
    RetryPolicy,
    TokenBucket,
    _Hook,
    classify,
)
from tests.support.kubeconfig import kubeconfig_to


@pytest.mark.parametrize(("method", "url", "want"), [
    ("GET", "https://h/apis/apps/v1/namespaces/shop/deployments?labelSelector=x",
     ("list", "deployments")),
    ("GET", "https://h/apis/apps/v1/namespaces/shop/deployments/web", ("get", "deployments")),
    ("GET", "https://h/api/v1/namespaces", ("list", "namespaces")),
    ("GET", "https://h/api/v1/namespaces/shop", ("get", "namespaces")),
    ("GET", "https://h/api/v1/pods?watch=true", ("watch", "pods")),
    ("PATCH", "https://h/apis/apps/v1/namespaces/s/deployments/w?dryRun=All&force=true",
     ("dry-run", "deployments")),
    ("PATCH", "https://h/apis/apps/v1/namespaces/s/deployments/w?fieldManager=pincompile",
     ("patch", "deployments")),
    ("DELETE", "https://h/apis/batch/v1/namespaces/s/jobs/j", ("delete", "jobs")),
    ("POST", "https://h/api/v1/namespaces/s/events", ("create", "events")),
    ("GET", "https://h/apis/apps/v1", ("discovery", "/apis/apps/v1")),
])
def test_requests_are_classified_like_the_audit_log(method: str, url: str,
                                                    want: tuple[str, str]) -> None:
    assert classify(method, url) == want


class Response:
    def __init__(self, status: int, retry_after: str | None = None) -> None:
        self.status, self.retry_after = status, retry_after

    def read(self) -> bytes:
        return b""

    def getheader(self, name: str, default: Any = None) -> Any:
        return self.retry_after if name == "Retry-After" else default


def test_429_and_5xx_are_retried_honouring_retry_after_and_counted() -> None:
    answers = [Response(429, "0.3"), Response(503), Response(200)]
    stats = RequestStats()
    hook = _Hook(lambda *a, **k: answers.pop(0), stats, TokenBucket(1000, 1000),
                 RetryPolicy(attempts=4, base=0.01, cap=0.02), (1, 1))
    started = time.monotonic()
    assert hook("GET", "https://h/api/v1/pods").status == 200
    assert time.monotonic() - started >= 0.3  # Retry-After wins over the back-off
    assert stats.by_verb["list"] == 3 and stats.writes == 0


def test_retries_give_up_and_a_dead_server_is_unreachable() -> None:
    def refuse(*_a: Any, **_k: Any) -> Any:
        raise ConnectionRefusedError("connection refused")

    hook = _Hook(refuse, RequestStats(), TokenBucket(1000, 1000),
                 RetryPolicy(attempts=3, base=0.001, cap=0.001), (1, 1))
    with pytest.raises(ClusterUnreachable, match="refused"):
        hook("GET", "https://h/api/v1/pods")
    answers = [Response(500)] * 3
    hook = _Hook(lambda *a, **k: answers.pop(0), RequestStats(), TokenBucket(1000, 1000),
                 RetryPolicy(attempts=3, base=0.001, cap=0.001), (1, 1))
    assert hook("PATCH", "https://h/api/v1/namespaces/s/pods/p").status == 500


def test_token_bucket_holds_the_rate_after_the_burst() -> None:
    bucket = TokenBucket(qps=50, burst=5)
    started = time.monotonic()
    for _ in range(15):
        bucket.take()
    assert time.monotonic() - started >= 0.18  # 10 requests past the burst at 50/s


def test_a_connection_keeps_a_connection_for_every_watch_and_worker(tmp_path: Any) -> None:
    """serve watches every managed kind while a pass's writers (as many as its pacer lets
    write at once) send requests: each of those threads gets a kept-alive connection (the
    client's default, 5 per CPU, made serve log 'Connection pool is full, discarding
    connection' and open a new TLS connection per request)."""
    from reconciler import kinds
    from reconciler.clients.connect import Connection
    from reconciler.clients.pace import CEILING

    path = kubeconfig_to(tmp_path, "https://127.0.0.1:9")
    conn = Connection("host", "host", str(path))
    try:
        pool = conn.api.rest_client.pool_manager.connection_pool_kw["maxsize"]
        assert pool >= len(kinds.MANAGED_KINDS) + CEILING
    finally:
        conn.close()


class _NotKubernetes(BaseHTTPRequestHandler):
    """A web server that answers every path 200 with an HTML page."""

    def do_GET(self) -> None:
        body = b"<html><body>welcome</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: Any) -> None:
        pass


def test_a_web_server_that_is_not_an_api_server_is_a_cluster_failure(tmp_path: Any) -> None:
    """Discovery answered 200 with HTML: the client's JSON reading failed (AttributeError,
    exit 70); it is the cluster that is wrong (exit 3), said with its address."""
    from click.testing import CliRunner

    from pincompile.cli import cli
    from reconciler.clients.connect import Connection

    server = ThreadingHTTPServer(("127.0.0.1", 0), _NotKubernetes)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    path = kubeconfig_to(tmp_path, url)
    conn = Connection("host", "host", str(path))
    try:
        with pytest.raises(ClusterUnreachable, match=f"{url} is not a Kubernetes API server"):
            conn.dynamic  # noqa: B018  # discovery runs on first use
        done = CliRunner().invoke(cli, ["get", "apps", "--kubeconfig", str(path)])
        assert done.exit_code == 3, done.output
        assert "not a Kubernetes API server" in done.output
        assert "Traceback" not in done.output and "internal error" not in done.output
    finally:
        conn.close()
        server.shutdown()
        server.server_close()
