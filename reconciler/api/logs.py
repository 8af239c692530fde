"""An app's logs: every chosen container's log streamed from its member cluster's API
server (the pod ``log`` subresource) and merged, each line prefixed with
``cluster/pod/container``.

Bounded: at most ``LogLimits.streams_per_user`` requests streaming at once per user, at
most ``LogLimits.containers`` containers per request, at most ``LogLimits.seconds`` per
request; a client that goes away closes every upstream stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from kubernetes.client.exceptions import ApiException

from reconciler.clients.connect import Connection

from .models import PodList
from .threads import hand_over


@dataclass(frozen=True)
class LogQuery:
    """What ``GET .../logs`` asks for (the names of kubectl's options)."""

    container: str | None = None
    tail_lines: int | None = None
    since_seconds: int | None = None
    follow: bool = False
    cluster: str | None = None
    pod: str | None = None
    timestamps: bool = False
    all_containers: bool = False
    """Also the init and sidecar containers (a container named is read whatever it is)."""


@dataclass(frozen=True)
class LogLimits:
    streams_per_user: int = 4
    containers: int = 30
    seconds: float = 3600.0
    line_bytes: int = 16 * 1024
    recheck_seconds: float = 30.0
    """How often an open stream asks again whether its caller may still read the logs."""


class LogTarget(NamedTuple):
    cluster: str
    namespace: str
    pod: str
    container: str

    @property
    def prefix(self) -> str:
        return f"{self.cluster}/{self.pod}/{self.container}"


class TooMany(ValueError):
    """The request names more containers than one stream may follow."""


def log_targets(pods: PodList, query: LogQuery, limit: int) -> list[LogTarget]:
    """The containers ``query`` picks from ``pods`` (every pod's own containers, with
    ``all_containers`` its sidecars and init containers too, unless narrowed); TooMany past
    ``limit``."""
    targets = [LogTarget(p.cluster, p.namespace, p.name, c.name) for p in pods.items
               for c in p.containers
               if (query.cluster is None or p.cluster == query.cluster)
               and (query.pod is None or p.name == query.pod)
               and (c.name == query.container if query.container is not None
                    else query.all_containers or c.type == "container")]
    if len(targets) > limit:
        raise TooMany(f"{len(targets)} containers match, at most {limit} stream at once: "
                      "narrow with cluster=, pod= or container=")
    return targets


class StreamSlots:
    """How many log streams each user has open; at most ``per_user``."""

    def __init__(self, per_user: int) -> None:
        self.per_user = per_user
        self._open: dict[str, int] = {}
        self._lock = threading.Lock()

    def take(self, user: str) -> bool:
        with self._lock:
            if self._open.get(user, 0) >= self.per_user:
                return False
            self._open[user] = self._open.get(user, 0) + 1
            return True

    def give_back(self, user: str) -> None:
        with self._lock:
            left = self._open.get(user, 0) - 1
            if left > 0:
                self._open[user] = left
            else:
                self._open.pop(user, None)

    def open(self, user: str) -> int:
        with self._lock:
            return self._open.get(user, 0)


Opener = Callable[[LogTarget], Any]
"""Opens one container's log: a streaming urllib3 response."""


POD_LOG_PATH = "/api/v1/namespaces/{namespace}/pods/{name}/log"


def pod_log_opener(connection: Callable[[str], Connection | None], query: LogQuery,
                   seconds: float) -> Opener:
    """Opens a log on the target's member API server (one GET of the ``log`` subresource,
    held open while ``follow``; ApiException when refused). Sent through the connection's
    client as ``CoreV1Api.read_namespaced_pod_log`` sends it, without that class: its
    module alone took longer to import than the rest of a ``logs`` command."""
    def open_log(target: LogTarget) -> Any:
        conn = connection(target.cluster)
        if conn is None:
            raise LookupError(f"no connection to member cluster {target.cluster}")
        params: list[tuple[str, Any]] = [("container", target.container),
                                         ("follow", query.follow)]
        if query.since_seconds is not None:
            params.append(("sinceSeconds", query.since_seconds))
        if query.tail_lines is not None:
            params.append(("tailLines", query.tail_lines))
        params.append(("timestamps", query.timestamps))
        request = conn.api.param_serialize(
            "GET", POD_LOG_PATH, path_params={"namespace": target.namespace,
                                              "name": target.pod},
            query_params=params, header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"])
        answer = conn.api.call_api(*request, _request_timeout=(3.0, seconds + 5.0))
        if not 200 <= answer.status <= 299:
            answer.read()
            raise ApiException.from_response(http_resp=answer, body=None, data=None)
        return answer.response

    return open_log


class MergedLogs:
    """Lines of several container logs, merged as they come, from one thread per log."""

    def __init__(self, targets: Sequence[LogTarget], opener: Opener, limits: LogLimits,
                 still_allowed: Callable[[], Awaitable[bool]] | None = None) -> None:
        self.targets, self.opener, self.limits = list(targets), opener, limits
        self.still_allowed = still_allowed
        """Asked every ``limits.recheck_seconds``: False ends the stream (access revoked)."""
        self._closed = threading.Event()
        self._responses: list[Any] = []
        self._lock = threading.Lock()

    async def lines(self) -> AsyncGenerator[bytes, None]:
        """Each line as ``cluster/pod/container line\\n``; ends when every log ended, at
        the time limit, when the caller may no longer read them, or when the consumer
        stops (then every upstream closes)."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[bytes | None] = asyncio.Queue(maxsize=1000)
        threads = [threading.Thread(target=self._pump, args=(t, loop, queue), daemon=True,
                                    name=f"logs-{t.prefix}") for t in self.targets]
        for thread in threads:
            thread.start()
        deadline = loop.time() + self.limits.seconds
        check_at = loop.time() + self.limits.recheck_seconds
        try:
            ended = 0
            while ended < len(threads):
                if self.still_allowed is not None and loop.time() >= check_at:
                    if not await self.still_allowed():
                        yield b"# access to these logs was revoked: stream closed\n"
                        return
                    check_at = loop.time() + self.limits.recheck_seconds
                wake = deadline if self.still_allowed is None else min(deadline, check_at)
                try:
                    item = await asyncio.wait_for(queue.get(), wake - loop.time())
                except TimeoutError:
                    if loop.time() < deadline:
                        continue  # time to ask again
                    yield f"# stream closed after {self.limits.seconds:g} s\n".encode()
                    return
                if item is None:
                    ended += 1
                else:
                    yield item
        finally:
            self.close()

    def close(self) -> None:
        """End every upstream stream at once (their threads then end and close them)."""
        with self._lock:
            self._closed.set()
            responses, self._responses = self._responses, []
        for response in responses:
            _interrupt(response)

    @property
    def upstreams_open(self) -> int:
        with self._lock:
            return len(self._responses)

    def _pump(self, target: LogTarget, loop: asyncio.AbstractEventLoop,
              queue: asyncio.Queue[bytes | None]) -> None:
        prefix = f"{target.prefix} ".encode()

        def put(item: bytes | None) -> bool:
            return hand_over(loop, queue, item, self._closed)

        response = None
        try:
            response = self.opener(target)
            with self._lock:
                if self._closed.is_set():
                    return
                self._responses.append(response)
            for line in _lines(response, self.limits.line_bytes):
                if self._closed.is_set() or not put(prefix + line):
                    return
        except Exception as exc:
            if not self._closed.is_set():
                put(f"# {target.prefix}: {_reason(exc)}\n".encode())
        finally:
            if response is not None:
                with contextlib.suppress(Exception):
                    response.close()
                with self._lock:
                    if response in self._responses:
                        self._responses.remove(response)
            if not self._closed.is_set():
                put(None)


def _interrupt(response: Any) -> None:
    """Make a thread blocked reading ``response`` return now, by shutting its socket down.
    Closing the response instead waits for that read to end (the file object's lock), i.e.
    for the container's next line: on the event loop's thread, that stalled every other
    request, and a command's Ctrl-C, for seconds."""
    sock = getattr(getattr(response, "connection", None), "sock", None)
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _lines(response: Any, most: int) -> Any:
    """The response's lines as they arrive, each cut to ``most`` bytes, ending in \\n."""
    pending = b""
    for chunk in response.stream(4096, decode_content=True):
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for line in complete:
            yield line[:most] + b"\n"
        if len(pending) > most:
            yield pending[:most] + b"\n"
            pending = b""
    if pending:
        yield pending[:most] + b"\n"


def _reason(exc: BaseException) -> str:
    status = getattr(exc, "status", None)
    if status is not None:
        return f"the member API server answered {status} {getattr(exc, 'reason', '')}".strip()
    return (str(exc) or type(exc).__name__).splitlines()[0][:300]
