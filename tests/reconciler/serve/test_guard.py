"""What one client can hold of serve's HTTP server, on real sockets: a connection that
trickles its request head is dropped after the read timeout, one address holds at most
its share of connections (so probes and other clients are still answered), forwarded
headers count only from configured proxies, a refused WebSocket handshake is no error in
the log, and no redirect names the Host header a client sent."""

from __future__ import annotations

import contextlib
import logging
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from reconciler.api.access import RateLimits
from reconciler.api.app import Gateway
from reconciler.serve.guard import parse_networks
from reconciler.store import Store
from tests.support.api_fakes import Statuses, TablePolicy
from tests.support.serve import http

Start = Callable[..., str]
ATTACKER = "127.0.0.2"
"""Another loopback address: the test's own requests come from 127.0.0.1."""


def address(base: str) -> tuple[str, int]:
    host, port = base.removeprefix("http://").split(":")
    return host, int(port)


def read_all(sock: socket.socket, deadline: float) -> bytes | None:
    """What the server sent until it closed the connection (None: still open at
    ``deadline``)."""
    answer = b""
    try:
        sock.settimeout(max(0.1, deadline - time.monotonic()))
        while chunk := sock.recv(4096):
            answer += chunk
    except ConnectionResetError:
        pass
    except TimeoutError:
        return None
    return answer


def test_one_address_trickling_request_heads_cannot_take_the_server_down(
        http_server: Start) -> None:
    """150 connections from one address, each sending part of a request head, under a
    150-connection limit (the attack that made /healthz answer 503 for 56 s)."""
    base = http_server(read_timeout=2, connections=150, per_client=50)
    slow = []
    for _ in range(150):
        sock = socket.create_connection(address(base), timeout=10,
                                        source_address=(ATTACKER, 0))
        with contextlib.suppress(OSError):  # refused at once: the address holds its share
            sock.sendall(b"GET /status HTTP/1.1\r\nHost: x\r\nX-Pad: ")
        slow.append(sock)
    started = time.monotonic()
    health = []
    while time.monotonic() - started < 3.0:  # past the read timeout
        health.append(http("GET", f"{base}/healthz")[0])
    assert set(health) == {200}, f"/healthz answered {sorted(set(health))}"
    deadline = started + 10
    answers = [read_all(sock, deadline) for sock in slow]
    for sock in slow:
        sock.close()
    assert None not in answers, f"{answers.count(None)} trickling connections still open"
    timed_out = sum(a.startswith(b"HTTP/1.1 408") for a in answers if a)
    assert 0 < timed_out <= 50, timed_out


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store.open(f"sqlite:///{tmp_path / 'insight.db'}")
    yield opened
    opened.close()


def console_gateway(store: Store) -> Gateway:
    return Gateway(apps=Statuses({}), store=store,
                   access=TablePolicy({"alice-token": "alice"}, set()),
                   limits=RateLimits(1000, 1000))


def wrong_logins(base: str, forwarded_for: list[str]) -> list[int]:
    """A login with a wrong token per ``X-Forwarded-For`` value, from this machine."""
    import re
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
    page = opener.open(f"{base}/login").read().decode()
    csrf = re.search(r'name="csrf" value="([^"]+)"', page)
    assert csrf
    statuses = []
    for value in forwarded_for:
        request = urllib.request.Request(
            f"{base}/login", data=f"token=wrong&csrf={csrf.group(1)}".encode(),
            headers={"X-Forwarded-For": value,
                     "Content-Type": "application/x-www-form-urlencoded"})
        try:
            statuses.append(opener.open(request).status)
        except urllib.error.HTTPError as exc:
            statuses.append(exc.code)
    return statuses


def test_forwarded_headers_count_only_from_configured_proxies(
        http_server: Start, store: Store) -> None:
    made_up = [f"198.51.100.{i}" for i in range(11)]
    direct = http_server(console_gateway(store))
    assert wrong_logins(direct, made_up) == [401] * 10 + [429], \
        "a client on this machine escaped the login throttle with made-up X-Forwarded-For"
    proxied = http_server(console_gateway(store), proxies=parse_networks("127.0.0.1"))
    assert wrong_logins(proxied, ["203.0.113.5"] * 11)[-1] == 429
    assert wrong_logins(proxied, ["203.0.113.6"]) == [401], "another client behind the proxy"


def test_a_refused_websocket_handshake_is_answered_and_logs_no_error(
        http_server: Start) -> None:
    base = http_server()
    seen: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = seen.append  # type: ignore[method-assign]
    uvicorn_log = logging.getLogger("uvicorn.error")
    uvicorn_log.addHandler(handler)
    try:
        for _ in range(3):
            with socket.create_connection(address(base), timeout=10) as sock:
                sock.sendall(b"GET /api/v1/apps/PinApp/shop/web/exec?command=ls HTTP/1.1\r\n"
                             b"Host: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                             b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                             b"Sec-WebSocket-Version: 13\r\n\r\n")
                answer = read_all(sock, time.monotonic() + 10)
            assert answer is not None and answer.startswith(b"HTTP/1.1 503"), answer
    finally:
        uvicorn_log.removeHandler(handler)
    assert [r.getMessage() for r in seen if r.levelno >= logging.ERROR] == []


def test_a_trailing_slash_is_not_redirected_to_the_host_a_client_named(
        http_server: Start) -> None:
    base = http_server()
    with socket.create_connection(address(base), timeout=10) as sock:
        sock.sendall(b"GET /login/ HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n")
        answer = read_all(sock, time.monotonic() + 10)
    assert answer is not None and b"evil.example" not in answer, answer
