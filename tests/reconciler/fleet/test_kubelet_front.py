"""The kubelet front: an exec reaches kwok wrapped (the pod's directory, the session's
token) and ends when its connection closes; other requests pass unchanged but for
``Connection: close``; a log request waits for the pod's log; only the fleet's clients
get an answer."""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs

import pytest

from reconciler.fleet import sessions
from reconciler.fleet.certs import Pki, generate_pki
from reconciler.fleet.kubelet_front import (
    Cluster,
    Front,
    StdinWatch,
    parse_head,
    rewrite_head,
)
from reconciler.fleet.pod_agent import contexts
from reconciler.fleet.ports import choose_ports
from reconciler.fleet.processes import client_ssl_context

EXEC = (b"POST /exec/shop/web-0/main?command=sh&command=-c&command=echo%20hi&input=1"
        b"&output=1&tty=0 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\n"
        b"Upgrade: SPDY/3.1\r\n\r\n")
LOGS = (b"GET /containerLogs/shop/web-0/main?follow=true HTTP/1.1\r\nHost: x\r\n"
        b"Connection: keep-alive\r\n\r\n")


def test_the_head_names_the_pod_and_the_command() -> None:
    request = parse_head(EXEC)
    assert request is not None
    assert (request.kind, request.namespace, request.pod) == ("exec", "shop", "web-0")
    assert request.command == ("sh", "-c", "echo hi") and request.upgrade
    health = parse_head(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert health is not None and health.kind == "" and not health.upgrade
    for bad in (b"GET /exec/../etc/main?command=id HTTP/1.1\r\n\r\n",
                b"POST /exec/shop/web-0/main HTTP/1.1\r\n\r\n",  # no command
                b"GET /containerLogs/Shop/web-0/main HTTP/1.1\r\n\r\n", b"nonsense\r\n\r\n"):
        assert parse_head(bad) is None, bad


def test_the_exec_command_is_replaced_and_plain_requests_close_after_one_answer() -> None:
    request = parse_head(EXEC)
    assert request is not None
    head = rewrite_head(EXEC, request, ["/bin/sh", "-c", "x y", "a&b"])
    line = head.split(b"\r\n", 1)[0].decode()
    query = parse_qs(line.split(" ")[1].split("?", 1)[1])
    assert query["command"] == ["/bin/sh", "-c", "x y", "a&b"] and query["tty"] == ["0"]
    assert b"Upgrade: SPDY/3.1" in head and b"Connection: close" not in head
    logs = parse_head(LOGS)
    assert logs is not None
    plain = rewrite_head(LOGS, logs, None)
    assert plain.startswith(LOGS.split(b"\r\n", 1)[0])
    assert plain.count(b"Connection:") == 1 and plain.endswith(b"Connection: close\r\n\r\n")


class FakeKwok:
    """kwok's place: answers every request with its head, then waits for the client."""

    def __init__(self, pki: Pki) -> None:
        self.ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.ctx.load_cert_chain(str(pki.serving_cert), str(pki.serving_key))
        self.heads: list[bytes] = []
        self.when: list[float] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        self.heads.append(head)
        self.when.append(time.monotonic())
        writer.write(b"HTTP/1.1 200 OK\r\n\r\n" + head)
        await writer.drain()
        if b"Connection: close" in head:
            writer.close()
            return
        await reader.read()  # an exec stream: until the client goes
        writer.close()


@pytest.fixture
def pki(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pki]:
    yield generate_pki(tmp_path_factory.mktemp("pki"))


@dataclass
class Ran:
    """What one request through a front did."""

    got: bytes
    kwok: FakeKwok
    #: the sessions ended while the client's connection was still open, and in all
    ended_open: list[str]
    ended: list[str]
    cluster: Cluster


async def _run(pki: Pki, tmp_path: Path, client: ssl.SSLContext,
               request: bytes, ready: Callable[[str, str], bool] = lambda _ns, _pod: True,
               stream: bool = False, kwok: FakeKwok | None = None,
               then: bytes = b"") -> Ran:
    """Serve one front and a fake kwok, send ``request``, read the answer (a stream's
    first: the answer's head and the head kwok got; then send ``then`` and wait a little,
    then close)."""
    kwok_port, front_port = choose_ports(2)
    kwok = kwok or FakeKwok(pki)
    upstream = await asyncio.start_server(kwok.handle, "127.0.0.1", kwok_port, ssl=kwok.ctx)
    ended: list[str] = []
    cluster = Cluster("c1", front_port, kwok_port, lambda ns, pod: tmp_path / ns / pod,
                      ready, lambda: ({1}, None))
    server_ctx, client_ctx = contexts(pki)
    front = Front([cluster], server_ctx, client_ctx, exec_uid=65534,
                  end=lambda token, _uid, _parents: ended.append(token) or 0)
    up = asyncio.Event()
    serving = asyncio.create_task(front.serve(up.set))
    await up.wait()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", front_port, ssl=client)
        writer.write(request)
        if stream:
            got = await reader.readuntil(b"\r\n\r\n") + await reader.readuntil(b"\r\n\r\n")
        else:
            got = await reader.read()
        writer.write(then)
        for _ in range(40 if then else 0):
            if ended:
                break
            await asyncio.sleep(0.05)
        ended_open = list(ended)
        writer.close()
        for _ in range(50):  # the front ends the session once it sees the close
            if len(ended) > len(ended_open) or not stream:
                break
            await asyncio.sleep(0.05)
    finally:
        serving.cancel()
        upstream.close()
    return Ran(got, kwok, ended_open, ended, cluster)


def test_an_exec_runs_wrapped_in_the_pods_directory_and_ends_with_its_connection(
        pki: Pki, tmp_path: Path) -> None:
    client = client_ssl_context(pki.ca_cert, pki.client_cert("admin"),
                                pki.client_key("admin"))
    ran = asyncio.run(_run(pki, tmp_path, client, EXEC, stream=True))
    (head,) = ran.kwok.heads
    command = parse_qs(head.split(b" ")[1].decode().split("?", 1)[1])["command"]
    token = command[5]
    assert command == sessions.wrapper_argv(token, tmp_path / "shop" / "web-0", "web-0",
                                            ["sh", "-c", "echo hi"])
    assert ran.ended == [token] and not ran.ended_open and not ran.cluster.live
    assert ran.got.startswith(b"HTTP/1.1 200 OK")


def test_a_log_request_passes_once_the_pods_log_is_there(pki: Pki, tmp_path: Path) -> None:
    client = client_ssl_context(pki.ca_cert, pki.client_cert("admin"),
                                pki.client_key("admin"))
    there = time.monotonic() + 0.5
    ran = asyncio.run(_run(pki, tmp_path, client, LOGS,
                           lambda _ns, _pod: time.monotonic() >= there))
    assert ran.kwok.heads[0].endswith(b"Connection: close\r\n\r\n") and not ran.ended
    assert ran.kwok.when[0] >= there
    assert ran.got.startswith(b"HTTP/1.1 200 OK")


def test_a_port_forward_passes_as_it_is_with_no_session(pki: Pki, tmp_path: Path) -> None:
    forward = (b"GET /portForward/shop/web-0?port=8080 HTTP/1.1\r\nHost: x\r\n"
               b"Connection: Upgrade\r\nUpgrade: websocket\r\n"
               b"Sec-WebSocket-Protocol: v4.channel.k8s.io\r\n\r\n")
    request = parse_head(forward)
    assert request is not None and (request.kind, request.pod) == ("portForward", "web-0")
    client = client_ssl_context(pki.ca_cert, pki.client_cert("admin"),
                                pki.client_key("admin"))
    ran = asyncio.run(_run(pki, tmp_path, client, forward, stream=True))
    assert ran.kwok.heads == [forward] and not ran.ended and not ran.cluster.live
    assert ran.got.startswith(b"HTTP/1.1 200 OK")


def test_a_client_without_a_certificate_of_the_fleet_gets_nothing(
        pki: Pki, tmp_path: Path) -> None:
    anonymous = ssl.create_default_context(cafile=str(pki.ca_cert))
    kwok = FakeKwok(pki)
    try:
        got = asyncio.run(_run(pki, tmp_path, anonymous, LOGS, kwok=kwok)).got
    except (ssl.SSLError, ConnectionError, asyncio.IncompleteReadError):
        got = b""  # refused in the handshake (TLS 1.3: maybe only at the first read)
    assert got == b"" and kwok.heads == []


def control(kind: int, stream: int, payload: bytes = b"\0" * 6) -> bytes:
    """A SPDY/3.1 control frame (SYN_STREAM: 1, RST_STREAM: 3) for ``stream``."""
    body = stream.to_bytes(4, "big") + payload
    return bytes([0x80, 3]) + kind.to_bytes(2, "big") + b"\0" + len(body).to_bytes(3, "big") + body


def data(stream: int, payload: bytes, fin: bool = False) -> bytes:
    return (stream.to_bytes(4, "big") + bytes([1 if fin else 0])
            + len(payload).to_bytes(3, "big") + payload)


@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_a_terminal_closes_when_its_input_stream_ends(chunk: int) -> None:
    """The API server opens the error stream, then stdin (then stdout, resize); typed
    keys flow on stdin; closing the terminal closes stdin (FIN), or resets it."""
    opened = control(1, 1) + control(1, 3) + control(1, 5) + control(1, 7)
    typing = data(3, b"ls\r" * 5000) + data(5, b"", fin=True) + data(1, b"x")
    for end in (data(3, b"", fin=True), data(3, b"exit\r", fin=True), control(3, 3, b"\0" * 4)):
        watch = StdinWatch()
        stream = opened + typing + end
        seen = [watch.feed(stream[i:i + chunk]) for i in range(0, len(stream), chunk)]
        first = seen.index(True) * chunk  # told once the last frame's head has come
        assert watch.stdin == 3 and all(seen[seen.index(True):]), (end, chunk)
        assert len(opened + typing) <= first + chunk and first < len(stream), (end, chunk)


def test_a_terminal_session_is_told_apart_from_other_execs() -> None:
    tty = parse_head(EXEC.replace(b"tty=0", b"tty=1").replace(b"input=1", b"input=1"))
    assert tty is not None and tty.terminal
    plain = parse_head(EXEC)  # no terminal: its input may end while it runs on
    assert plain is not None and not plain.terminal
    no_input = parse_head(EXEC.replace(b"tty=0", b"tty=1").replace(b"&input=1", b""))
    assert no_input is not None and not no_input.terminal


def test_a_terminal_session_ends_when_its_input_does_while_plain_ones_run_on(
        pki: Pki, tmp_path: Path) -> None:
    client = client_ssl_context(pki.ca_cert, pki.client_cert("admin"),
                                pki.client_key("admin"))
    closing = control(1, 1) + control(1, 3) + data(3, b"ls\r") + data(3, b"", fin=True)
    tty = asyncio.run(_run(pki, tmp_path, client, EXEC.replace(b"tty=0", b"tty=1"),
                           stream=True, then=closing))
    assert len(tty.ended_open) == 1 and tty.ended_open[0] in tty.ended
    plain = asyncio.run(_run(pki, tmp_path, client, EXEC, stream=True, then=closing))
    assert not plain.ended_open and len(plain.ended) == 1  # only once the connection closed
