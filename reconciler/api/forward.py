"""A forwarded connection: the client's WebSocket bridged to the ``portforward``
subresource of a pod on its member API server (``v4.channel.k8s.io``: one port, so data on
channel 0 and the member's errors on channel 1, each channel's first message the port).
One WebSocket is one TCP connection to the pod's port, as kubectl's are.

The client's frames (``.../portforward``, a WebSocket, docs/api/README.md): every message
is binary, its first byte the channel — 0 data, either way, 3 status (JSON) from the
server: first ``{"type": "target", ...}`` naming the pod and the port, last
``{"type": "closed"}`` (the pod's side closed the connection) or ``{"type": "error",
"reason": ..., "message": ...}``. A client closes its WebSocket to close the connection.

Bounded as exec sessions are (:mod:`.exec`'s bridge): one reader thread per connection,
a bounded queue to the client, ``ForwardLimits.idle_seconds`` without a byte either way
and ``ForwardLimits.seconds`` in all end it, ``connections_per_user`` at once.

Not ``kubernetes.stream.portforward``: its proxy thread buffers whatever the pod sends
while the reader is slow (no bound, no back-pressure) and waits in a ``select`` that only
closing every socket ends; the member side here is exec's, with a few lines of framing."""

from __future__ import annotations

import asyncio

from fastapi import WebSocket
from fastapi.concurrency import run_in_threadpool

from reconciler.clients.connect import Connection

from .exec import Activity, Ending, Queue, Upstream, bridge, from_client, pod_path, to_client
from .exec import watchdog as idle_watchdog
from .exec_protocol import ExecTarget
from .forward_protocol import DATA, ERROR, MEMBER_PROTOCOL, ForwardLimits


def open_upstream(connection: Connection, target: ExecTarget, port: int, timeout: float
                  ) -> Upstream:
    """The member's port-forward of ``port`` in the target's pod (UpstreamRefused)."""
    return Upstream.connect(connection, f"{pod_path(target)}/portforward?ports={port}",
                            [MEMBER_PROTOCOL], timeout)


async def run_forward(ws: WebSocket, upstream: Upstream, limits: ForwardLimits, name: str
                      ) -> Ending:
    """Pass bytes between ``ws`` (accepted) and ``upstream`` until either side closes or
    a limit ends the connection; the client gets the last status. The member's socket and
    the reader thread are gone when this returns."""
    return await bridge(ws, upstream, f"forward-{name}", lambda queue, activity: [
        _to_client(ws, queue, activity), _from_client(ws, upstream, limits, activity),
        idle_watchdog(activity, limits)])


async def _to_client(ws: WebSocket, queue: Queue, activity: Activity) -> Ending:
    started: set[int] = set()  # the channels whose first message (the port) came
    while True:
        item = await queue.get()
        if isinstance(item, Ending):
            return item
        if item is None:
            return Ending("closed")
        if not item:
            continue
        channel, payload = item[0], item[1:]
        if channel not in started:
            started.add(channel)
            continue
        if channel == ERROR and payload:
            return Ending("refused", message=payload.decode(errors="replace")[:300],
                          close_code=1011)
        if channel != DATA or not payload:
            continue
        activity.last = asyncio.get_running_loop().time()
        if not await to_client(ws, item):  # channel 0 both ways: passed as it is
            return Ending("client closed")


async def _from_client(ws: WebSocket, upstream: Upstream, limits: ForwardLimits,
                       activity: Activity) -> Ending:
    while True:
        data = await from_client(ws, limits, activity)
        if isinstance(data, Ending):
            return data
        if data[0] != DATA:
            return Ending("bad channel", message=f"no channel {data[0]} from a client "
                          "(0 data)", close_code=1008)
        if len(data) > 1:
            await run_in_threadpool(upstream.send, data)
