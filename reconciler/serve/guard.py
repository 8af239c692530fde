"""What one client may hold of serve's HTTP server before the app sees a request: a
connection must send a complete request head within ``head_timeout`` seconds of opening
(or of its last answer, on a kept-alive connection), and one client address holds at most
``per_client`` connections (WebSockets included). Configured proxies are exempt from the
per-address bound: every client behind them shares their address.

uvicorn drops a connection idle between requests (its keep-alive timeout) but never one
that trickles a request head; these protocols add both bounds on top of uvicorn's own
(``limit_concurrency`` for the whole server).
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Iterable
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _answer(status: str, text: str, *headers: str) -> bytes:
    """A whole HTTP answer that closes the connection (written before any request)."""
    body = text.encode() + b"\n"
    head = [f"HTTP/1.1 {status}", "content-type: text/plain; charset=utf-8", *headers,
            "connection: close", f"content-length: {len(body)}"]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


TOO_MANY = _answer("429 Too Many Requests", "too many connections open from this address",
                   "retry-after: 1")
TOO_SLOW = _answer("408 Request Timeout", "the request head did not come in time")


def parse_networks(text: str) -> tuple[Network, ...]:
    """``10.0.0.0/8,127.0.0.1`` → networks (ValueError naming the part that is not one)."""
    found: list[Network] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            found.append(ipaddress.ip_network(part, strict=False))
        except ValueError:
            raise ValueError(f"'{part}' is not an IP address or network") from None
    return tuple(found)


class ClientGuard:
    """Open connections per client address (``per_client`` at most; 0: no bound), and the
    head timeout; one per server, used from its event loop only."""

    def __init__(self, per_client: int, head_timeout: float,
                 exempt: Iterable[Network] = ()) -> None:
        self.per_client, self.head_timeout = per_client, head_timeout
        self.exempt = tuple(exempt)
        self._open: dict[str, int] = {}
        self._held: dict[int, str] = {}
        self.refused = 0
        """Connections refused for their address's bound."""
        self.timed_out = 0
        """Connections dropped without a complete request head in time."""

    def admit(self, transport: asyncio.BaseTransport, address: str) -> bool:
        """Count ``transport`` against ``address``; False when the address is at its bound."""
        if self.per_client and not self._exempt(address) \
                and self._open.get(address, 0) >= self.per_client:
            self.refused += 1
            return False
        self._open[address] = self._open.get(address, 0) + 1
        self._held[id(transport)] = address
        return True

    def release(self, transport: asyncio.BaseTransport) -> None:
        """``transport`` closed (idempotent: an upgraded connection ends once)."""
        address = self._held.pop(id(transport), None)
        if address is None:
            return
        left = self._open[address] - 1
        if left:
            self._open[address] = left
        else:
            del self._open[address]

    def open_from(self, address: str) -> int:
        return self._open.get(address, 0)

    def _exempt(self, address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in network for network in self.exempt)


class GuardedConfig(uvicorn.Config):
    """uvicorn's configuration with the server's :class:`ClientGuard` for its protocols."""

    def __init__(self, app: Any, guard: ClientGuard, **options: Any) -> None:
        super().__init__(app, http=GuardedHTTP, ws=GuardedWebSocket, **options)
        self.guard = guard


def _guard(config: uvicorn.Config) -> ClientGuard:
    assert isinstance(config, GuardedConfig), "the guarded protocols need a GuardedConfig"
    return config.guard


class GuardedHTTP(H11Protocol):
    """uvicorn's h11 protocol, refusing a connection over its address's bound and
    dropping one whose request head is not complete within the head timeout."""

    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if not _guard(self.config).admit(transport, self.client[0] if self.client else ""):
            transport.write(TOO_MANY)
            transport.close()
            return
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        _guard(self.config).release(self.transport)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self._disarm()  # the head is in: the body has its own read timeout

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._arm()

    def _arm(self) -> None:
        self._disarm()
        self._head_timer = self.loop.call_later(_guard(self.config).head_timeout, self._late)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _late(self) -> None:
        self._head_timer = None
        if self.conn.their_state is not h11.IDLE or self.transport.is_closing():
            return
        if self.conn.trailing_data[0]:  # part of a head came: say why it ends
            _guard(self.config).timed_out += 1
            self.transport.write(TOO_SLOW)
        self.transport.close()


class GuardedWebSocket(WebSocketsSansIOProtocol):
    """uvicorn's WebSocket protocol, giving the connection's place back when it ends, and
    taking a refused handshake (an HTTP answer instead of the upgrade) as complete, which
    uvicorn would log as an error each time."""

    def connection_lost(self, exc: Exception | None) -> None:
        _guard(self.config).release(self.transport)
        super().connection_lost(exc)

    async def send(self, message: Any) -> None:
        await super().send(message)
        if message["type"] == "websocket.http.response.body" \
                and not message.get("more_body", False):
            self.handshake_complete = True
