"""The kubelet endpoint of a fleet cluster's nodes: a TLS front for that cluster's kwok.

A kube-apiserver serves a pod's ``log`` and ``exec`` by calling the kubelet port its node
reports; the fleet's nodes report this front's port (kwok's ``--node-port``), and the
front passes each request on to kwok, one request per connection, with two changes:

- an exec's command runs under the session's wrapper (:func:`.sessions.wrapper_argv`):
  in the pod's own scratch directory, with a token that names the session. The session
  ends — every process of it is killed (:func:`.sessions.end_session`) and kwok's reaper
  is told to sweep — when its connection closes (the command ended) and, for a session
  with a terminal, when the terminal closes: the client ends its input (the front reads
  the SPDY frames the API server sends, :class:`StdinWatch`), as a terminal hangs up. A
  session without a terminal whose client goes away runs until its command ends, as on
  any cluster (the API server tells the kubelet nothing more);
- a log request for a pod whose log the fleet has not set up yet waits for it (up to
  :data:`LOG_WAIT` seconds), so a pod that just started has its own log, never an error.

Any other request (``portForward``: SPDY or WebSocket alike) passes as it is, both ways,
until either side closes.

Only clients with a certificate of the fleet's CA get an answer (the API servers).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
import secrets
import signal
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlencode

from reconciler.fleet import sessions

#: a request's head (request line and headers) must come within this many bytes and seconds
HEAD_LIMIT = 64 * 1024
HEAD_SECONDS = 10.0
LOG_WAIT = 5.0
CHUNK = 64 * 1024
#: Kubernetes' names of namespaces, pods and containers (DNS subdomains at most)
NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
#: the kubelet's paths that name a pod: /KIND/NAMESPACE/POD/...
POD_PATHS = ("exec", "containerLogs", "attach", "portForward", "run")


@dataclass(frozen=True)
class Request:
    """What the front needs to know about one request to the kubelet."""

    method: str
    #: exec, containerLogs, ... ("" for a path that names no pod, such as /healthz)
    kind: str
    namespace: str
    pod: str
    command: tuple[str, ...]
    upgrade: bool
    #: an exec with a terminal and input (``tty=1&input=1``) over SPDY
    terminal: bool = False


class StdinWatch:
    """Reads the SPDY/3.1 frames an API server sends for an exec, and tells when the
    exec's input ends: its stream (the second the client opens: the error stream comes
    first, then stdin) is closed (a data frame with FIN) or reset."""

    def __init__(self) -> None:
        self._buffer = b""
        self._skip = 0
        self._opened = 0
        self.stdin: int | None = None
        self.ended = False

    def feed(self, data: bytes) -> bool:
        """Take the next bytes from the client; True once its input has ended."""
        if self._skip:
            taken = min(self._skip, len(data))
            self._skip -= taken
            data = data[taken:]
        self._buffer += data
        while not self.ended and len(self._buffer) >= 8:
            head, length = self._buffer[:8], int.from_bytes(self._buffer[5:8], "big")
            if head[0] & 0x80:  # a control frame: its first word names the stream
                if length >= 4 > len(self._buffer) - 8:
                    break  # that word has not come yet
                first = (int.from_bytes(self._buffer[8:12], "big") & 0x7FFFFFFF
                         if length >= 4 else 0)
                kind = int.from_bytes(head[2:4], "big")
                if kind == 1:  # SYN_STREAM
                    self._opened += 1
                    self.stdin = first if self._opened == 2 else self.stdin
                self.ended = kind == 3 and first == self.stdin  # RST_STREAM
            else:
                stream = int.from_bytes(head[:4], "big") & 0x7FFFFFFF
                self.ended = stream == self.stdin and bool(head[4] & 0x01)  # FIN
            whole = 8 + length
            self._skip = max(0, whole - len(self._buffer))
            self._buffer = self._buffer[whole:]
        return self.ended


def parse_head(head: bytes) -> Request | None:
    """The request a head asks for (None: a malformed one, a pod path without a valid
    namespace and pod, or an exec without a command)."""
    try:
        line, *headers = head.decode("latin-1").split("\r\n")
        method, target, _version = line.split(" ")
    except ValueError:
        return None
    path, _, query = target.partition("?")
    parts = path.split("/")
    names = {h.split(":", 1)[0].strip().lower() for h in headers if ":" in h}
    command = tuple(v for k, v in parse_qsl(query, keep_blank_values=True) if k == "command")
    if len(parts) < 2 or parts[1] not in POD_PATHS:
        return Request(method, "", "", "", (), "upgrade" in names)
    if len(parts) < 4 or not all(NAME.match(p) for p in parts[2:4]):
        return None
    if parts[1] == "exec" and not command:
        return None
    flags = {k: v for k, v in parse_qsl(query) if k in ("tty", "input")}
    spdy = any(h.lower().replace(" ", "") == "upgrade:spdy/3.1" for h in headers)
    return Request(method, parts[1], parts[2], parts[3], command, "upgrade" in names,
                   terminal=spdy and flags == {"tty": "1", "input": "1"})


def rewrite_head(head: bytes, request: Request, command: list[str] | None) -> bytes:
    """``head`` with the exec's command replaced by ``command`` (if given), and a
    ``Connection: close`` for a request that is not an upgrade."""
    line, _, rest = head.partition(b"\r\n")
    method, target, version = line.split(b" ")
    if command is not None:
        path, _, query = target.partition(b"?")
        kept = [(k, v) for k, v in parse_qsl(query.decode("latin-1"), keep_blank_values=True)
                if k != "command"]
        target = path + b"?" + urlencode(
            kept + [("command", arg) for arg in command], quote_via=quote).encode("latin-1")
    headers = [h for h in rest.split(b"\r\n") if h]
    if not request.upgrade:
        headers = [h for h in headers if not h.lower().startswith(b"connection:")]
        headers.append(b"Connection: close")
    return b"\r\n".join([b" ".join([method, target, version]), *headers]) + b"\r\n\r\n"


@dataclass
class Cluster:
    """One cluster's front: where it listens, its kwok, and what it knows of its pods."""

    name: str
    port: int
    kwok_port: int
    #: the pod's scratch directory, created for the exec user if missing
    scratch: Callable[[str, str], Path]
    #: whether the fleet has set up a pod's log
    log_ready: Callable[[str, str], bool]
    #: pids of kwok (the wrappers' parent) and of its reaper
    kwok: Callable[[], tuple[set[int], int | None]]
    #: live sessions: token -> (namespace, pod)
    live: dict[str, tuple[str, str]] = field(default_factory=dict)


class Front:
    """The fronts of every cluster of a fleet, in one asyncio loop."""

    def __init__(self, clusters: list[Cluster], server: ssl.SSLContext,
                 client: ssl.SSLContext, exec_uid: int,
                 end: Callable[[str, int, set[int]], int] = sessions.end_session) -> None:
        self.clusters = clusters
        self.server_ctx, self.client_ctx = server, client
        self.exec_uid = exec_uid
        self._end = end
        self._lock = threading.Lock()

    async def serve(self, ready: Callable[[], None] = lambda: None) -> None:
        """Listen on every cluster's port until cancelled."""
        servers = [await asyncio.start_server(
            functools.partial(self._handle, cluster), "127.0.0.1", cluster.port,
            ssl=self.server_ctx, limit=HEAD_LIMIT) for cluster in self.clusters]
        ready()
        try:
            await asyncio.gather(*(s.serve_forever() for s in servers))
        finally:
            for server in servers:
                server.close()

    async def _handle(self, cluster: Cluster, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> None:
        token = None
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_SECONDS)
            request = parse_head(head)
            if request is None:
                writer.write(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
                return
            command = None
            if request.kind == "exec":
                token = secrets.token_hex(16)
                directory = await asyncio.to_thread(cluster.scratch, request.namespace,
                                                    request.pod)
                command = sessions.wrapper_argv(token, directory, request.pod,
                                                list(request.command))
                with self._lock:
                    cluster.live[token] = (request.namespace, request.pod)
            elif request.kind == "containerLogs":
                await self._wait_for_log(cluster, request)
            up_reader, up_writer = await asyncio.open_connection(
                "127.0.0.1", cluster.kwok_port, ssl=self.client_ctx,
                server_hostname="127.0.0.1")
            up_writer.write(rewrite_head(head, request, command))
            hangup = (self._hangup(cluster, token) if token is not None and request.terminal
                      else None)
            await _pipe(reader, writer, up_reader, up_writer, hangup)
        except (OSError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
                TimeoutError, ssl.SSLError):
            pass
        finally:
            with contextlib.suppress(OSError, ssl.SSLError):
                writer.close()
            if token is not None:
                await asyncio.to_thread(self.end, cluster, token)

    def _hangup(self, cluster: Cluster, token: str) -> Callable[[bytes], None]:
        """What watches a terminal session's input and ends the session when it ends."""
        watch = StdinWatch()

        def seen(data: bytes) -> None:
            if not watch.ended and watch.feed(data):
                asyncio.get_running_loop().run_in_executor(None, self.end, cluster, token)

        return seen

    async def _wait_for_log(self, cluster: Cluster, request: Request) -> None:
        deadline = time.monotonic() + LOG_WAIT
        while (not cluster.log_ready(request.namespace, request.pod)
               and time.monotonic() < deadline):
            await asyncio.sleep(0.1)

    def end(self, cluster: Cluster, token: str) -> int:
        """End one session of ``cluster``: kill its processes, then have kwok's reaper
        sweep what they left."""
        with self._lock:
            cluster.live.pop(token, None)
        kwok, reaper = cluster.kwok()
        killed = self._end(token, self.exec_uid, kwok)
        if reaper is not None:
            with contextlib.suppress(OSError):
                os.kill(reaper, signal.SIGUSR1)
        return killed

    def end_pod(self, cluster: Cluster, namespace: str, pod: str) -> None:
        """End every session of a pod (it is gone)."""
        with self._lock:
            tokens = [t for t, where in cluster.live.items() if where == (namespace, pod)]
        for token in tokens:
            self.end(cluster, token)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                up_reader: asyncio.StreamReader, up_writer: asyncio.StreamWriter,
                observe: Callable[[bytes], None] | None = None) -> None:
    """Copy both ways until either side closes; then close both. ``observe`` sees what
    the client sends."""
    async def copy(src: asyncio.StreamReader, dst: asyncio.StreamWriter,
                   seen: Callable[[bytes], None] | None = None) -> None:
        while data := await src.read(CHUNK):
            if seen is not None:
                seen(data)
            dst.write(data)
            await dst.drain()

    tasks = [asyncio.create_task(copy(reader, up_writer, observe)),
             asyncio.create_task(copy(up_reader, writer))]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        with contextlib.suppress(OSError, ssl.SSLError):
            up_writer.close()
