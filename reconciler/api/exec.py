"""An exec session: the client's WebSocket bridged to the exec subresource of the pod's
member API server (``v5.channel.k8s.io``, else ``v4``), frames passed through by channel
(reconciler/api/exec_protocol.py).

Bounded: one thread per session reads the member's side (a bounded queue between it and
the client, so a slow client slows the command, not the server's memory); the session
ends at the command's exit, when either side goes, after ``ExecLimits.idle_seconds``
without a byte either way, or after ``ExecLimits.seconds``; every end closes the member's
socket, which ends that thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote, urlencode

import websocket as wsclient
from fastapi import HTTPException, WebSocket, WebSocketDisconnect
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from reconciler.clients.connect import Connection

from .access import AccessError, Caller, audit
from .exec_protocol import (
    CLOSE,
    RESIZE,
    STATUS,
    STDERR,
    STDIN,
    STDOUT,
    ExecLimits,
    ExecQuery,
    ExecTarget,
    exit_status,
    status_frame,
)
from .logs import StreamSlots
from .threads import hand_over

V5, V4 = "v5.channel.k8s.io", "v4.channel.k8s.io"


class UpstreamRefused(Exception):
    """The member API server did not start the exec: ``status`` (0: no answer)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Upstream:
    """One exec on a member API server, through websocket-client (blocking calls, made
    from threads; :meth:`abort` wakes any of them)."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.v5 = getattr(ws, "subprotocol", None) == V5

    @classmethod
    def open(cls, connection: Connection, target: ExecTarget, query: ExecQuery,
             timeout: float) -> Upstream:
        params = [("container", target.container), ("stdout", "true"),
                  ("stdin", _flag(query.stdin)), ("stderr", _flag(not query.tty)),
                  ("tty", _flag(query.tty)), *(("command", arg) for arg in query.command)]
        return cls.connect(connection, f"{pod_path(target)}/exec?{urlencode(params)}",
                           [V5, V4], timeout)

    @classmethod
    def connect(cls, connection: Connection, path: str, subprotocols: list[str],
                timeout: float) -> Upstream:
        """A WebSocket to ``path`` on the member API server, with the connection's
        credentials (UpstreamRefused: it did not answer, or not with an upgrade)."""
        cfg = connection.api.configuration
        url = "ws" + str(cfg.host).removeprefix("http") + path
        header = []
        token = cfg.get_api_key_with_prefix("BearerToken", alias="authorization")
        if token:
            header.append(f"Authorization: {token}")
        ws = wsclient.WebSocket(sslopt=_ssl_options(cfg), skip_utf8_validation=True)
        try:
            ws.connect(url, header=header, subprotocols=subprotocols, timeout=timeout,
                       suppress_origin=True)
        except wsclient.WebSocketBadStatusException as exc:
            body = (exc.resp_body or b"")[:300]
            raise UpstreamRefused(exc.status_code, f"{exc.status_code} "
                                  f"{body.decode(errors='replace') if body else ''}".strip()
                                  ) from None
        except (OSError, wsclient.WebSocketException) as exc:
            raise UpstreamRefused(0, str(exc)[:300] or type(exc).__name__) from None
        ws.settimeout(None)  # from now on only abort() ends a wait
        return cls(ws)

    def messages(self) -> Iterator[bytes]:
        """Each binary message as it comes, until the server closes."""
        while True:
            opcode, received = self.ws.recv_data_frame(True)
            if opcode == wsclient.ABNF.OPCODE_CLOSE:
                return
            if opcode in (wsclient.ABNF.OPCODE_BINARY, wsclient.ABNF.OPCODE_TEXT):
                yield bytes(received.data)

    def send(self, message: bytes) -> None:
        self.ws.send(message, opcode=wsclient.ABNF.OPCODE_BINARY)

    def close_stdin(self) -> None:
        """Tell the command its stdin ended (v5 only; v4 has no way to say it)."""
        if self.v5:
            self.send(bytes([CLOSE, STDIN]))

    def abort(self) -> None:
        """Wake every thread waiting on this socket and close it."""
        self.ws.abort()
        self.ws.shutdown()


async def open_member(pods: Any, cluster: str, slots: StreamSlots, user: str, full: str,
                      opener: Callable[[Connection], Upstream], refused: str) -> Upstream:
    """What ``opener`` opens on ``cluster``'s connection, holding one of ``user``'s
    ``slots`` (given back when it fails); HTTPException 503 (no connection), 429 (no slot
    left: ``full`` says so) or 502 (the member did not accept: ``refused``, and why)."""
    connection = pods.connection(cluster)
    if connection is None:
        raise HTTPException(503, f"no connection to member cluster {cluster}")
    if not slots.take(user):
        raise HTTPException(429, full, headers={"Retry-After": "5"})
    try:
        return await run_in_threadpool(opener, connection)
    except UpstreamRefused as exc:
        slots.give_back(user)
        raise HTTPException(502, f"{refused}: {exc}") from None
    except BaseException:
        slots.give_back(user)
        raise


async def deny(websocket: WebSocket, caller: Caller | None, exc: AccessError | HTTPException,
               **detail: Any) -> None:
    """Refuse a WebSocket's handshake with the HTTP answer ``exc`` says; audited."""
    status = exc.status if isinstance(exc, AccessError) else exc.status_code
    audit(caller, "GET", websocket.url.path, status, **detail)
    await websocket.send_denial_response(JSONResponse(
        {"detail": str(exc) if isinstance(exc, AccessError) else exc.detail},
        status_code=status, headers=getattr(exc, "headers", None)))


async def accepted(websocket: WebSocket, subprotocol: str, first: dict[str, Any],
                   run: Callable[[], Awaitable[Ending]], end: Callable[[], None]) -> Ending:
    """Accept ``websocket`` (with ``subprotocol`` when the client offers it), send it
    ``first`` as a status, then ``run`` the session; ``end`` once it is over, however."""
    ending = Ending("client closed")
    try:
        await websocket.accept(subprotocol=subprotocol if subprotocol in
                               websocket.scope.get("subprotocols", ()) else None)
        await websocket.send_bytes(status_frame(first))
        ending = await run()
    except (WebSocketDisconnect, OSError):
        pass  # gone before the session started
    finally:
        end()
    return ending


def pod_path(target: ExecTarget) -> str:
    """The member API's path of the target's pod."""
    return (f"/api/v1/namespaces/{quote(target.namespace, safe='')}/pods/"
            f"{quote(target.pod, safe='')}")


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _ssl_options(cfg: Any) -> dict[str, Any]:
    if not cfg.verify_ssl:
        options: dict[str, Any] = {"cert_reqs": ssl.CERT_NONE}
    else:
        options = {"cert_reqs": ssl.CERT_REQUIRED}
        if cfg.ssl_ca_cert:
            options["ca_certs"] = cfg.ssl_ca_cert
        if cfg.assert_hostname is not None:
            options["check_hostname"] = cfg.assert_hostname
    if cfg.cert_file:
        options["certfile"] = cfg.cert_file
    if cfg.key_file:
        options["keyfile"] = cfg.key_file
    if cfg.tls_server_name:
        options["server_hostname"] = cfg.tls_server_name
    return options


@dataclass
class Ending:
    """Why a session ended, for the client's last status and the audit line."""

    reason: str
    """exited, failed, client closed, idle timeout, time limit, upstream error,
    message too big, bad channel; a forwarded connection: closed, refused"""
    exit_code: int | None = None
    message: str = ""
    close_code: int = 1000

    def status(self) -> dict[str, Any]:
        if self.reason == "exited":
            return {"type": "exit", "exitCode": self.exit_code}
        if self.reason == "closed":  # a forwarded connection the pod's side closed
            return {"type": "closed"}
        return {"type": "error", "reason": self.reason, "message": self.message}


class Activity:
    """When a session started, and when a byte last passed either way."""

    def __init__(self, now: float) -> None:
        self.started = self.last = now


class SessionLimits(Protocol):
    @property
    def idle_seconds(self) -> float: ...

    @property
    def seconds(self) -> float: ...

    @property
    def message_bytes(self) -> int: ...


Queue = asyncio.Queue[bytes | Ending | None]
"""The member's messages as the reader thread hands them over (None: it closed)."""
Parts = Callable[[Queue, Activity], list[Coroutine[Any, Any, Ending]]]


async def run_session(ws: WebSocket, upstream: Upstream, query: ExecQuery,
                      limits: ExecLimits, name: str) -> Ending:
    """Pass frames between ``ws`` (accepted) and ``upstream`` until the session ends; send
    the client the last status and close it. The member's socket and its reader thread
    are gone when this returns."""
    return await bridge(ws, upstream, f"exec-{name}", lambda queue, activity: [
        _to_client(ws, queue, activity), _from_client(ws, upstream, query, limits, activity),
        watchdog(activity, limits)])


async def bridge(ws: WebSocket, upstream: Upstream, thread: str, parts: Parts) -> Ending:
    """Run ``parts`` (given the queue the member's messages come on, read by a thread
    named ``thread``) until the first ends; then end the others, the member's socket and
    that thread, and send the client the last status (why it ended) and close it."""
    loop = asyncio.get_running_loop()
    queue: Queue = asyncio.Queue(maxsize=64)
    closed = threading.Event()
    reader = threading.Thread(target=_read_upstream, args=(upstream, loop, queue, closed),
                              daemon=True, name=thread)
    activity = Activity(loop.time())
    reader.start()
    tasks = [asyncio.create_task(part) for part in parts(queue, activity)]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        first = next(iter(done))
        ending = first.result() if first.exception() is None else \
            Ending("upstream error", message=str(first.exception())[:300], close_code=1011)
    finally:
        closed.set()
        for task in tasks:
            task.cancel()
        with contextlib.suppress(Exception):
            upstream.abort()
        await asyncio.gather(*tasks, return_exceptions=True)
        await run_in_threadpool(reader.join, 5.0)
    if ending.reason != "client closed":
        with contextlib.suppress(Exception):
            await ws.send_bytes(status_frame(ending.status()))
            await ws.close(ending.close_code)
    return ending


def _read_upstream(upstream: Upstream, loop: asyncio.AbstractEventLoop, queue: Queue,
                   closed: threading.Event) -> None:
    ended = False
    try:
        for message in upstream.messages():
            ended = ended or message[:1] == bytes([STATUS])
            if not hand_over(loop, queue, message, closed):
                return
        hand_over(loop, queue, None, closed)
    except Exception as exc:
        if ended:  # the exit status came; answering the server's close failed (it is gone)
            hand_over(loop, queue, None, closed)
        elif not closed.is_set():
            hand_over(loop, queue, Ending("upstream error", message=f"the member API server "
                                          f"connection broke: {str(exc)[:200]}",
                                          close_code=1011), closed)


async def _to_client(ws: WebSocket, queue: Queue, activity: Activity) -> Ending:
    status: tuple[int | None, str] | None = None
    while True:
        item = await queue.get()
        if isinstance(item, Ending):
            return item
        if item is None:
            if status is None:
                return Ending("upstream error", message="the member API server closed the "
                              "exec without an exit status", close_code=1011)
            code, message = status
            return Ending("exited", code) if code is not None else Ending("failed",
                                                                          message=message)
        channel, payload = (item[0], item[1:]) if item else (STDIN, b"")
        if not payload:  # the member's empty frames (stream starts) carry nothing
            continue
        activity.last = asyncio.get_running_loop().time()
        if channel in (STDOUT, STDERR) and not await to_client(ws, item):
            return Ending("client closed")
        if channel == STATUS:
            status = exit_status(payload)


async def to_client(ws: WebSocket, message: bytes) -> bool:
    """Send ``message``; False when the client is gone."""
    try:
        await ws.send_bytes(message)
    except (WebSocketDisconnect, RuntimeError, OSError):
        return False
    return True


async def from_client(ws: WebSocket, limits: SessionLimits, activity: Activity
                      ) -> bytes | Ending:
    """The client's next message that is not empty (its time noted in ``activity``), or
    why there is none: it went, or sent one over ``limits.message_bytes``."""
    while True:
        message = await ws.receive()
        if message["type"] == "websocket.disconnect":
            return Ending("client closed")
        data = message.get("bytes") or (message.get("text") or "").encode()
        if len(data) > limits.message_bytes:
            return Ending("message too big", message=f"a message is at most "
                          f"{limits.message_bytes} bytes", close_code=1009)
        if data:
            activity.last = asyncio.get_running_loop().time()
            return data


async def _from_client(ws: WebSocket, upstream: Upstream, query: ExecQuery,
                       limits: ExecLimits, activity: Activity) -> Ending:
    while True:
        data = await from_client(ws, limits, activity)
        if isinstance(data, Ending):
            return data
        channel, payload = data[0], data[1:]
        if (channel, True) in ((STDIN, query.stdin), (RESIZE, query.tty)):
            await run_in_threadpool(upstream.send, data)
        elif channel == CLOSE and payload[:1] == bytes([STDIN]) and query.stdin:
            await run_in_threadpool(upstream.close_stdin)
        elif channel not in (STDIN, RESIZE, CLOSE):
            return Ending("bad channel", message=f"no channel {channel} from a client "
                          "(0 stdin, 4 resize, 255 close)", close_code=1008)


async def watchdog(activity: Activity, limits: SessionLimits) -> Ending:
    """Ends a session at its time limit, or once no byte passed for its idle time."""
    loop = asyncio.get_running_loop()
    while True:
        now = loop.time()
        if now - activity.started >= limits.seconds:
            return Ending("time limit", message=f"session closed after {limits.seconds:g} s")
        if now - activity.last >= limits.idle_seconds:
            return Ending("idle timeout", message=f"no byte either way for "
                          f"{limits.idle_seconds:g} s")
        await asyncio.sleep(min(activity.started + limits.seconds,
                                activity.last + limits.idle_seconds) - now + 0.01)
