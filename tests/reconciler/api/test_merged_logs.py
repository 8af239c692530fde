"""Merged log streams end at once when their consumer goes, over real sockets."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import urllib3

from reconciler.api.logs import LogLimits, LogTarget, MergedLogs

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
    deadline = time.monotonic() + 2.0
    while logs.upstreams_open or any(t.name.startswith("logs-c") for t in threading.enumerate()):
        assert time.monotonic() < deadline, "a log thread outlived its consumer"
        time.sleep(0.02)


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
