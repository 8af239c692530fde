"""``pincompile port-forward``: local TCP ports forwarded to a port of an app's Running
pod, through the PinCompute API (one WebSocket per connection, bridged to the member
cluster's ``portforward``: reconciler/api/forward.py), until Ctrl-C.

Bounded: at most ``--max-connections`` connections at once (one more is closed at once,
said on stderr), each closed after ``--idle-timeout`` without a byte either way; every
connection is a task of one event loop, and its socket and WebSocket are closed when it
ends (so is everything on Ctrl-C). A local client that ends its side ends the connection:
the API's WebSocket, like Kubernetes' ``v4.channel.k8s.io``, cannot half-close."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import ipaddress
import json
import re
import socket
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import click

from pincompile.appref import AppRef
from pincompile.commands.common import EXIT_CLUSTER, EXIT_OK, EXIT_USAGE, fail
from reconciler.api.client import ApiClient, ApiError, ServerUnreachable
from reconciler.api.exec_protocol import STATUS, split
from reconciler.api.forward_protocol import DATA, PORT_PATTERN, ForwardLimits
from reconciler.commands.interrupt import bounded_interrupt
from reconciler.commands.options import DURATION
from reconciler.commands.remote import (
    SERVER_HELP,
    api_client,
    api_errors,
    api_options,
    app_ref,
    failure,
)

CHUNK = ForwardLimits().message_bytes // 2
"""What one read of a local connection sends at most (in one message, under the API's
bound)."""

FORWARD_EXIT_CODES = """\b
Exit codes: 0 after Ctrl-C; 1 not found (no such app or pod), 2 usage (a bad port, a
local port in use, a kubeconfig that cannot be used), 3 the server or a cluster is
unreachable or refused (401, 403, 429, 5xx), the app has no Running pod (409), or the
pod went away or stopped running while forwarding."""


@dataclass(frozen=True)
class PortPair:
    local: int | None
    """0: a free port, chosen when listening; None: the remote port's number (``http``
    alone)."""
    remote: int | str
    """A number, or the name of a port the pod's containers declare."""


def parse_ports(text: str) -> PortPair:
    """``LOCAL:REMOTE``, ``:REMOTE`` or ``0:REMOTE`` (a free local port), or ``PORT``
    (the same both sides), as kubectl reads them; REMOTE may be a port's name (``http``,
    ``8080:http``); ValueError otherwise."""
    local, colon, remote = text.strip().rpartition(":")
    usage = f"{text!r}: give LOCAL:REMOTE, :REMOTE or PORT (e.g. 8080:80, :http)"
    named = not remote.isdigit()
    if named and not re.fullmatch(PORT_PATTERN, remote):
        raise ValueError(usage)
    if not colon:
        local = "" if named else remote
    elif not local:
        local = "0"
    try:
        pair = PortPair(int(local) if local else None, remote if named else int(remote))
    except ValueError:
        raise ValueError(usage) from None
    if (pair.local is not None and not 0 <= pair.local <= 65535) or \
            (isinstance(pair.remote, int) and not 1 <= pair.remote <= 65535):
        raise ValueError(f"{text!r}: a remote port is 1 to 65535 (or a port's name), a "
                         "local one 0 (a free one) to 65535")
    return pair


def _ports(_ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]
           ) -> list[PortPair]:
    try:
        return [parse_ports(v) for v in values]
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@dataclass(frozen=True)
class Host:
    address: str
    required: bool = True
    """False for ``::1`` of ``localhost``: a machine without IPv6 listens on 127.0.0.1
    alone, as kubectl does."""


def parse_addresses(values: tuple[str, ...]) -> list[Host]:
    """``--address``, repeated or comma-separated, as kubectl reads it: IP addresses, and
    ``localhost`` for 127.0.0.1 and ::1; ValueError otherwise."""
    hosts: list[Host] = []
    for value in values:
        for part in filter(None, (p.strip() for p in value.split(","))):
            if part == "localhost":
                hosts += [Host("127.0.0.1"), Host("::1", required=False)]
                continue
            try:
                hosts.append(Host(str(ipaddress.ip_address(part))))
            except ValueError:
                raise ValueError(f"{part!r}: give an IP address or localhost") from None
    if not hosts:
        raise ValueError("give an IP address or localhost")
    required: dict[str, bool] = {}
    for host in hosts:  # each address once, required if named on its own
        required[host.address] = required.get(host.address, False) or host.required
    return [Host(address, needed) for address, needed in required.items()]


def _addresses(_ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]
               ) -> list[Host]:
    try:
        return parse_addresses(values)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@dataclass(frozen=True)
class Limits:
    connections: int = 16
    idle_seconds: float = 900.0


Opener = Callable[[int], Awaitable[Any]]
"""Opens one connection to a remote port: an asyncio WebSocket of the API (ApiError,
ServerUnreachable)."""


class Forwarder:
    """Accepts on the listeners and forwards each connection through its own WebSocket
    until :meth:`serve` is cancelled, or a connection finds the pod gone (``code`` and
    ``message`` then say so)."""

    def __init__(self, open_ws: Opener, limits: Limits, say: Callable[[str], None],
                 what: str = "", client: ApiClient | None = None) -> None:
        self.open_ws, self.limits, self.say, self.what = open_ws, limits, say, what
        self.client = client
        """Whose failures are said (in its words: a cluster's, when the API runs in this
        process)."""
        self.active: set[asyncio.Task[Any]] = set()
        self.code, self.message = EXIT_OK, ""
        self._stop: asyncio.Event | None = None

    async def serve(self, listeners: list[tuple[socket.socket, int]]) -> int:
        """Forward until cancelled or stopped; every connection closed when it returns."""
        self._stop = asyncio.Event()
        servers = []
        try:
            for sock, remote in listeners:
                servers.append(await asyncio.start_server(
                    functools.partial(self._accepted, remote), sock=sock, limit=CHUNK))
            await self._stop.wait()
        finally:
            for server in servers:
                server.close()
            for task in list(self.active):
                task.cancel()
            await asyncio.gather(*self.active, return_exceptions=True)
        return self.code

    async def _accepted(self, remote: int, reader: asyncio.StreamReader,
                        writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        local = writer.get_extra_info("sockname")[1]
        if task is None or len(self.active) >= self.limits.connections:
            self.say(f"refused a connection on port {local}: {len(self.active)} open "
                     "already (--max-connections)")
            writer.close()
            return
        self.active.add(task)
        try:
            with contextlib.suppress(OSError):  # stdout gone (| head): forward on
                click.echo(f"Handling connection for {local}")
            try:
                ws = await self.open_ws(remote)
            except (ApiError, ServerUnreachable) as exc:
                self._failed(remote, exc)
                return
            try:
                why = await relay(reader, writer, ws, self.limits.idle_seconds)
            finally:
                with contextlib.suppress(Exception):
                    await ws.close()
            if why:
                self.say(f"a connection to port {remote}: {why}")
        finally:
            self.active.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _failed(self, remote: int, exc: ApiError | ServerUnreachable) -> None:
        message, _ = failure(self.what, exc, self.client)
        self.say(f"a connection to port {remote}: {message}")
        if isinstance(exc, ApiError) and exc.status in (404, 409):
            self.stop(EXIT_CLUSTER, f"{message}; run port-forward again to reach another "
                                    "pod")

    def stop(self, code: int, message: str) -> None:
        self.code, self.message = code, message
        if self._stop is not None:
            self._stop.set()


async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, ws: Any,
                idle: float) -> str:
    """Bytes both ways between a local connection and its WebSocket until either closes,
    or none passed for ``idle`` seconds; why it ended ("" when a side closed)."""
    loop = asyncio.get_running_loop()
    last = [loop.time()]

    async def up() -> str:
        while data := await reader.read(CHUNK):
            last[0] = loop.time()
            await ws.send(bytes([DATA]) + data)
        return ""

    async def down() -> str:
        async for message in ws:
            channel, payload = split(message if isinstance(message, bytes)
                                     else message.encode())
            if channel == DATA:
                last[0] = loop.time()
                writer.write(payload)
                await writer.drain()
            elif channel == STATUS:
                status = json.loads(payload)
                if status.get("type") == "error":
                    return f"{status.get('reason')}: {status.get('message')}"
        return ""

    async def watch() -> str:
        while (left := last[0] + idle - loop.time()) > 0:
            await asyncio.sleep(left + 0.01)
        return f"closed after {idle:g}s without a byte either way (--idle-timeout)"

    tasks = [asyncio.create_task(part()) for part in (up, down, watch)]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        first = next(iter(done))
        failed = first.exception()
        if failed is None:
            return first.result()
        return "" if _closed(failed) else f"{type(failed).__name__}: {failed}"[:300]
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _closed(exc: BaseException) -> bool:
    """Whether ``exc`` says no more than that a side went."""
    from websockets.exceptions import ConnectionClosed

    return isinstance(exc, ConnectionClosed | OSError)


def listen(pairs: list[tuple[int, int]], hosts: list[Host] | None = None
           ) -> list[tuple[socket.socket, int]]:
    """A socket listening on each host (127.0.0.1 unless told) for each (local, remote)
    pair, with its remote port; a free local port (0) is chosen once, the same on every
    host. A port in use (or not allowed) on a required host exits 2."""
    opened: list[tuple[socket.socket, int]] = []
    for local, remote in pairs:
        for host in hosts or [Host("127.0.0.1")]:
            family = socket.AF_INET6 if ":" in host.address else socket.AF_INET
            try:
                sock = socket.create_server((host.address, local), family=family)
            except OSError as exc:
                if not host.required:
                    continue
                for sock, _ in opened:
                    sock.close()
                fail(f"cannot listen on {_where(host.address, local)}: "
                     f"{exc.strerror or exc}", EXIT_USAGE)
            local = sock.getsockname()[1]
            opened.append((sock, remote))
    return opened


def _where(address: str, port: int) -> str:
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


def resolve(client: ApiClient, app: AppRef, ports: list[PortPair], cluster: str | None,
            pod: str | None) -> tuple[dict[str, Any], list[tuple[int, int]]]:
    """The pod the first port reaches (as exec picks it), and every pair as numbers: a
    named remote port looked up in that pod (one call per name), a local one left out
    taking the remote's number."""
    target = client.forward_target(*app, ports[0].remote, cluster=cluster, pod=pod)
    numbers: dict[int | str, int] = {ports[0].remote: int(target["port"])}
    for pair in ports[1:]:
        if pair.remote not in numbers:
            numbers[pair.remote] = pair.remote if isinstance(pair.remote, int) else int(
                client.forward_target(*app, pair.remote, cluster=target["cluster"],
                                      pod=target["pod"])["port"])
    return target, [(numbers[p.remote] if p.local is None else p.local, numbers[p.remote])
                    for p in ports]


@click.command("port-forward")
@click.argument("app", metavar="KIND/PROJECT/NAME", callback=app_ref)
@click.argument("ports", nargs=-1, required=True, metavar="[LOCAL]:REMOTE...",
                callback=_ports)
@click.option("--cluster", help="A pod in this member cluster.")
@click.option("--pod", help="This pod (default: a Running pod of the app, as exec picks; "
                            "named on stderr).")
@click.option("--address", "hosts", multiple=True, default=("localhost",), show_default=True,
              callback=_addresses, metavar="ADDRESS",
              help="Listen on these addresses (repeat it or separate them with commas): IP "
                   "addresses, or localhost for 127.0.0.1 and ::1. Another address than "
                   "localhost lets other machines reach the pod.")
@click.option("--max-connections", type=click.IntRange(1, 1000), default=Limits.connections,
              show_default=True, help="At most this many connections at once; one more is "
                                      "closed at once.")
@click.option("--idle-timeout", type=DURATION, default="15m", show_default=True,
              help="Close a connection after this long without a byte either way.")
@click.option("-q", "--quiet", is_flag=True, help="Do not name the pod on stderr.")
@api_options
def port_forward(app: AppRef, ports: list[PortPair], cluster: str | None, pod: str | None,
                 hosts: list[Host], max_connections: int, idle_timeout: float, quiet: bool,
                 **api: Any) -> None:
    """Forward local ports to a port of one Running pod of an app, in whichever member
    cluster it runs in, until Ctrl-C: each connection to localhost:LOCAL (--address)
    reaches REMOTE in the pod. REMOTE is a number or the name of a port the pod's
    containers declare (`http`); `:REMOTE` (or `0:REMOTE`) listens on a free port; `PORT`
    is PORT:PORT (`http` alone listens on its number). The pod is chosen as exec chooses it
    (a Running pod, ready ones first; --cluster, --pod); each listener's line,
    `Forwarding from 127.0.0.1:LOCAL -> REMOTE`, is printed as kubectl prints it once it
    listens. If the pod goes away, port-forward ends (exit 3): run it again to reach
    another.

    Authorized as exec is: through the API your token needs `create` on the app's `exec`
    subresource in its project (see docs/api/README.md); straight to the clusters, the
    kubeconfig's user needs `create` on `pods/portforward` in the member cluster.

    \b
    Examples:
      pincompile port-forward PinApp/search/search-api 8080:8080
      pincompile port-forward PinApp/search/search-api :8080     # a free local port
      pincompile port-forward PinApp/search/search-api 8080 9090 --cluster use1a-general-01
      pincompile port-forward PinApp/search/search-api 9000:proxy  # a sidecar's named port
      pincompile port-forward PinApp/search/search-api 8080 --address 0.0.0.0
    """
    with bounded_interrupt(EXIT_OK), api_client(**api) as (client, _):
        with api_errors(str(app), client):
            target, numbered = resolve(client, app, ports, cluster, pod)
        listeners = listen(numbered, hosts)
        if not quiet:
            click.echo(f"# {target['cluster']}/{target['namespace']}/{target['pod']}",
                       err=True)
        for sock, remote in listeners:
            address, port = sock.getsockname()[:2]
            click.echo(f"Forwarding from {_where(address, port)} -> {remote}")
        sys.stdout.flush()
        forwarder = Forwarder(functools.partial(_open, client, app, target),
                              Limits(max_connections, idle_timeout),
                              lambda line: click.echo(line, err=True), str(app), client)
        try:
            asyncio.run(forwarder.serve(listeners))
        except KeyboardInterrupt:
            pass
        finally:
            for sock, _ in listeners:
                sock.close()
    if forwarder.code != EXIT_OK:
        fail(forwarder.message, forwarder.code)
    sys.exit(EXIT_OK)


def _open(client: ApiClient, app: AppRef, target: dict[str, Any], remote: int) -> Awaitable[Any]:
    return client.forward(*app, remote, cluster=target["cluster"], pod=target["pod"])


port_forward.help = (f"{inspect.cleandoc(port_forward.help or '')}\n\n{SERVER_HELP}\n\n"
                     f"{FORWARD_EXIT_CODES}")
