"""`pincompile port-forward`'s own parts: LOCAL:REMOTE as kubectl reads it, and the
forwarder's bounds — at most so many connections at once, an idle one closed, a pod gone
ending it all, nothing (task, socket, WebSocket) left once a connection ends — first
against a fake WebSocket, then through the API on a real server whose member echoes.
On the fleet: test_access_e2e.py and test_day2_e2e.py."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner

from pincompile.cli import cli
from reconciler.api import forward_routes
from reconciler.api.app import Gateway, create_app
from reconciler.api.client import ApiClient, ApiError
from reconciler.api.exec_protocol import status_frame
from reconciler.commands.port_forward import (
    Forwarder,
    Host,
    Limits,
    PortPair,
    listen,
    parse_addresses,
    parse_ports,
)
from tests.reconciler.api.test_forward import EchoingMember
from tests.reconciler.api.test_forward import gateway as gateway
from tests.support.api_fleet import served_locally
from tests.support.forwarding import exchange, port_forwarding
from tests.support.wait import wait_for


@pytest.mark.parametrize(("text", "pair"), [
    ("8080:80", PortPair(8080, 80)), (":80", PortPair(0, 80)), ("0:80", PortPair(0, 80)),
    ("5432", PortPair(5432, 5432)), (" 1:65535 ", PortPair(1, 65535)),
    ("8080:http", PortPair(8080, "http")), (":http", PortPair(0, "http")),
    ("http", PortPair(None, "http"))])
def test_ports_are_read_as_kubectl_reads_them(text: str, pair: PortPair) -> None:
    assert parse_ports(text) == pair


@pytest.mark.parametrize("text", ["", "a:80", "80:", "8080:0", "70000:80", "1:2:3", "-1:80",
                                  "8080:HTTP", "8080:http_x", "8080:-http"])
def test_a_bad_port_is_a_usage_error(text: str) -> None:
    with pytest.raises(ValueError, match=r"give LOCAL:REMOTE|a remote port is"):
        parse_ports(text)
    done = CliRunner().invoke(cli, ["port-forward", "PinApp/shop/web", text or "''"])
    assert done.exit_code == 2, done.output


class FakeWs:
    """The API's side of one connection: the target first, then it echoes (``hold``: it
    sends nothing back)."""

    def __init__(self, hold: bool = False) -> None:
        self.hold, self.closed = hold, False
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._queue.put_nowait(status_frame({"type": "target", "pod": "web-b"}))

    async def send(self, message: bytes) -> None:
        if not self.hold:
            await self._queue.put(message)

    async def close(self) -> None:
        self.closed = True
        await self._queue.put(None)

    def __aiter__(self) -> FakeWs:
        return self

    async def __anext__(self) -> bytes:
        item = await self._queue.get()
        if item is None:
            raise StopAsyncIteration
        return item


@contextlib.contextmanager
def forwarding(forwarder: Forwarder, remote: int = 80) -> Iterator[tuple[int, Any]]:
    """``forwarder`` serving a free local port in a thread of its own: (the port, the
    thread's loop)."""
    listeners = listen([(0, remote)])
    loop = asyncio.new_event_loop()
    done: list[int] = []
    thread = threading.Thread(target=lambda: done.append(
        loop.run_until_complete(forwarder.serve(listeners))), daemon=True)
    thread.start()
    try:
        yield listeners[0][0].getsockname()[1], loop
    finally:
        loop.call_soon_threadsafe(forwarder.stop, forwarder.code, forwarder.message)
        thread.join(10)
        loop.close()
        assert not thread.is_alive() and not forwarder.active


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    return sock


def test_a_connection_echoes_and_ends_with_its_websocket_closed() -> None:
    opened: list[FakeWs] = []

    async def open_ws(remote: int) -> FakeWs:
        opened.append(FakeWs())
        return opened[-1]

    said: list[str] = []
    forwarder = Forwarder(open_ws, Limits(), said.append)
    with forwarding(forwarder) as (port, _):
        with connect(port) as sock:
            sock.sendall(b"ping")
            assert sock.recv(10) == b"ping"
        wait_for(lambda: opened[0].closed and not forwarder.active, 10,
                 "the connection and its WebSocket to be closed")
    assert said == []


def test_one_connection_over_the_limit_is_closed_and_an_idle_one_ends() -> None:
    async def open_ws(remote: int) -> FakeWs:
        return FakeWs(hold=True)

    said: list[str] = []
    forwarder = Forwarder(open_ws, Limits(connections=1, idle_seconds=2.0), said.append)
    with forwarding(forwarder) as (port, _), connect(port) as first:
        first.sendall(b"x")
        wait_for(lambda: forwarder.active, 10, "the first connection to be accepted")
        with connect(port) as second:
            assert second.recv(10) == b""  # closed at once
        assert not first.recv(10)  # idle: closed after 2 s
    assert said[0].startswith("refused a connection on port") and "1 open" in said[0], said
    assert "without a byte either way" in said[1], said


def test_a_pod_gone_ends_the_forward_with_exit_3() -> None:
    async def open_ws(remote: int) -> FakeWs:
        raise ApiError(404, "PinApp/shop/web: no pod named web-b")

    said: list[str] = []
    forwarder = Forwarder(open_ws, Limits(), said.append, "PinApp/shop/web")
    listeners = listen([(0, 80)])
    port = listeners[0][0].getsockname()[1]

    async def run() -> int:
        serving = asyncio.create_task(forwarder.serve(listeners))
        await asyncio.sleep(0.1)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        assert await reader.read() == b""
        writer.close()
        return await asyncio.wait_for(serving, 5)

    assert asyncio.run(run()) == 3
    assert "no pod named web-b" in forwarder.message and "again" in forwarder.message
    with pytest.raises(OSError):  # no longer listening
        connect(port).close()


def test_addresses_are_read_as_kubectl_reads_them() -> None:
    assert parse_addresses(("localhost",)) == [Host("127.0.0.1"), Host("::1", required=False)]
    assert parse_addresses(("0.0.0.0,::", "10.1.2.3", "0.0.0.0")) == [
        Host("0.0.0.0"), Host("::"), Host("10.1.2.3")]
    assert parse_addresses(("localhost", "::1")) == [Host("127.0.0.1"), Host("::1")]
    for bad in (("example.com",), ("",), ("127.0.0.1, 300.1.1.1",)):
        with pytest.raises(ValueError, match="an IP address or localhost"):
            parse_addresses(bad)
    done = CliRunner().invoke(cli, ["port-forward", "PinApp/shop/web", "80", "--address",
                                    "my-laptop"])
    assert done.exit_code == 2 and "an IP address or localhost" in done.output


def test_localhost_listens_on_both_loopbacks_with_one_free_port() -> None:
    listeners = listen([(0, 80), (0, 81)], parse_addresses(("localhost",)))
    try:
        named = [(s.getsockname()[0], s.getsockname()[1], remote) for s, remote in listeners]
        assert [(a, r) for a, _, r in named] == [("127.0.0.1", 80), ("::1", 80),
                                                 ("127.0.0.1", 81), ("::1", 81)]
        assert named[0][1] == named[1][1] != named[2][1] == named[3][1]
        for address, port, _ in named:
            with socket.create_connection((address, port), timeout=5):
                pass
    finally:
        for sock, _ in listeners:
            sock.close()


def test_a_busy_local_port_is_a_usage_error() -> None:
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        with pytest.raises(SystemExit) as exited:
            listen([(0, 80), (port, 81)])
    assert exited.value.code == 2


def test_through_the_api_a_connection_reaches_the_members_port(
        gateway: Gateway, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command as a user runs it, against a real server whose member echoes."""
    monkeypatch.setattr(forward_routes, "open_upstream", lambda *args: EchoingMember(8080))
    with served_locally(create_app(gateway)) as url:
        client = ApiClient(url, "alice-token")
        target = client.forward_target("PinApp", "shop", "web-00", 8080)
        assert (target["cluster"], target["pod"]) == ("west", "web-b")
        with pytest.raises(ApiError) as denied:
            ApiClient(url, "bob-token").forward_target("PinApp", "shop", "web-00", 8080)
        assert denied.value.status == 403
        env: dict[str, str | None] = {"PINCOMPILE_SERVER": url,
                                      "PINCOMPILE_TOKEN": "alice-token"}
        # the gateway lets alice have 1 connection open: each exchange waits until the
        # server has ended the one before (it does so once the client's side closed)
        closed = lambda: gateway.forward_sessions.open("alice") == 0  # noqa: E731
        with port_forwarding(["PinApp/shop/web-00", ":8080"], env) as port:
            assert exchange(port, b"hello") == b"hello"
            wait_for(closed, 10, "the server to end the first connection")
            assert exchange(port, b"again") == b"again"
        wait_for(closed, 10, "the server to end the second connection")
        with port_forwarding(["PinApp/shop/web-00", ":http"], env) as port:  # its name
            assert exchange(port, b"named") == b"named"
        missing = CliRunner().invoke(cli, ["port-forward", "PinApp/shop/web-00", "grpc"],
                                     env=env)
        assert missing.exit_code == 1 and "no TCP port named grpc" in missing.output
