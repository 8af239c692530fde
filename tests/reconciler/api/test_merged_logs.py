"""Merged log streams end at once when their consumer goes, and each log is asked of its
member API server as the query says, over real sockets."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import urllib3

from reconciler.api.logs import LogLimits, LogQuery, LogTarget, MergedLogs, pod_log_opener
from reconciler.clients.connect import Connection
from tests.support.member_logs import LINE, TOKEN, member_logs
from tests.support.wait import wait_for

HOLD_SECONDS = 10.0


class _QuietLog(BaseHTTPRequestHandler):
    """A follow stream: one line, then nothing for HOLD_SECONDS (a quiet container)."""

    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        line = b"first line\n"
        self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
        self.wfile.flush()
        self.server.released.wait(HOLD_SECONDS)  # type: ignore[attr-defined]
        self.close_connection = True

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def quiet_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _QuietLog)
    server.released = threading.Event()  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/log"
    finally:
        server.released.set()  # type: ignore[attr-defined]
        server.shutdown()
        server.server_close()


def test_a_consumer_that_goes_ends_every_upstream_at_once(quiet_server: str) -> None:
    pool = urllib3.PoolManager()
    targets = [LogTarget(f"c{i}", "ns", "pod", "main") for i in range(3)]
    logs = MergedLogs(targets, lambda _: pool.request("GET", quiet_server,
                                                      preload_content=False),
                      LogLimits())

    async def read_then_leave() -> tuple[list[bytes], float]:
        stream = logs.lines()
        seen = [await anext(stream) for _ in targets]
        left = time.monotonic()
        await stream.aclose()  # the client went away: every upstream closes
        return seen, time.monotonic() - left

    seen, closing = asyncio.run(read_then_leave())
    assert sorted(seen) == [f"c{i}/pod/main first line\n".encode() for i in range(3)]
    # it used to wait for each quiet container's next line (here HOLD_SECONDS), on the
    # event loop's thread
    assert closing < 1.0
    wait_for(lambda: not logs.upstreams_open and not any(
        t.name.startswith("logs-c") for t in threading.enumerate()), 2.0,
        "every log thread to end with its consumer", interval=0.02)


def test_a_stream_ends_soon_after_its_caller_may_no_longer_read_the_logs(
        quiet_server: str) -> None:
    """A RoleBinding revoked while a follow stream is open: the stream asks again every
    ``recheck_seconds`` and ends with a line saying why (it used to run its hour out)."""
    pool = urllib3.PoolManager()
    answers = iter([True, False])
    asked: list[float] = []

    async def still_allowed() -> bool:
        asked.append(time.monotonic())
        return next(answers)

    logs = MergedLogs([LogTarget("c0", "ns", "pod", "main")],
                      lambda _: pool.request("GET", quiet_server, preload_content=False),
                      LogLimits(recheck_seconds=0.3), still_allowed)

    async def read_all() -> list[bytes]:
        return [line async for line in logs.lines()]

    started = time.monotonic()
    seen = asyncio.run(read_all())
    assert seen == [b"c0/pod/main first line\n",
                    b"# access to these logs was revoked: stream closed\n"]
    assert len(asked) == 2 and time.monotonic() - started < 3.0  # the container stays quiet


def test_a_log_is_asked_for_with_the_querys_options_and_a_refusal_is_a_line(
        tmp_path: Path) -> None:
    """kubectl's options under the API server's names (those unset not sent) and the
    kubeconfig's token; a pod the member does not know is a line saying what it answered."""
    with member_logs(tmp_path) as member:
        conn = Connection("east", "east", str(member.kubeconfig))
        query = LogQuery(tail_lines=10, since_seconds=60, follow=True, timestamps=True)
        logs = MergedLogs([LogTarget("east", "shop", "web-1", "main"),
                           LogTarget("east", "shop", "missing", "main")],
                          pod_log_opener(lambda _: conn, query, 5.0), LogLimits())

        async def read_all() -> list[bytes]:
            return [line async for line in logs.lines()]

        seen = asyncio.run(read_all())
        plain = pod_log_opener(lambda _: conn, LogQuery(), 5.0)(
            LogTarget("east", "shop", "web/2", "side car"))
        assert plain.read() == LINE
        conn.close()
    assert sorted(seen) == [b"# east/missing/main: the member API server answered 404 "
                            b"Not Found\n", b"east/web-1/main " + LINE]
    options = "container=main&follow=true&sinceSeconds=60&tailLines=10&timestamps=true"
    assert sorted(member.asked) == [
        (f"/api/v1/namespaces/shop/pods/missing/log?{options}", f"Bearer {TOKEN}"),
        ("/api/v1/namespaces/shop/pods/web%2F2/log?container=side%20car&follow=false"
         "&timestamps=false", f"Bearer {TOKEN}"),
        (f"/api/v1/namespaces/shop/pods/web-1/log?{options}", f"Bearer {TOKEN}")]
