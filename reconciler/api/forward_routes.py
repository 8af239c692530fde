"""``.../portforward``: which pod a port-forward reaches (GET), and each forwarded
connection (a WebSocket, :mod:`.forward`). Both are authorized as exec is: ``create`` on
the app's ``exec`` subresource in its project, since a port of the pod reaches what a
command in it would."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Query, Request, WebSocket
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel
from starlette.requests import HTTPConnection

from reconciler.model import AppKey

from .access import AccessError, Caller, audit
from .exec import Upstream, accepted, deny, open_member
from .exec_protocol import ExecTarget, NoRunningPod, NotFound
from .forward import open_upstream, run_forward
from .forward_protocol import PORT_PATTERN, SUBPROTOCOL, pick_pod, port_number
from .models import PodList, Problem

PATH = "/api/v1/apps/{kind}/{project}/{name}/portforward"
Port = Annotated[int, Query(ge=1, le=65535, description="the pod's port")]
NamedPort = Annotated[str, Query(pattern=PORT_PATTERN, max_length=15,
                                 description="the pod's port: a number, or the name of a "
                                             "TCP port its containers declare")]
Authorize = Callable[[HTTPConnection, Caller, str, str, str], Awaitable[None]]
PodsOf = Callable[[Any, AppKey, str | None], PodList]


class ForwardTarget(BaseModel):
    """The pod a port-forward of the app reaches, and the number of the port asked for."""

    cluster: str
    namespace: str
    pod: str
    port: int


def mount_forward(api: FastAPI, caller_of: Callable[[HTTPConnection], Awaitable[Caller]],
                  authorize: Authorize, pods_of: PodsOf) -> None:
    @api.get(PATH, response_model=ForwardTarget, summary="The pod a port-forward reaches",
             dependencies=[Depends(caller_of)],
             responses={code: {"model": Problem} for code in (404, 409, 422)})
    async def forward_target(request: Request, kind: str, project: str, name: str,
                             port: NamedPort, cluster: str | None = None,
                             pod: str | None = None) -> ForwardTarget:
        """The Running pod ``exec`` would pick (``cluster``, ``pod``: as exec's), and the
        number of ``port`` in it (a name is looked up among its containers' ports, 404 if
        none declares it); each connection then goes to the WebSocket on this path with
        that cluster, pod and number."""
        await authorize(request, request.state.caller, "exec", kind, project)
        app = (kind, project, name)
        pods, target = await _target(request.app.state.gateway, app, cluster, pod, pods_of)
        try:
            number = port_number(pods, target, port)
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        except NotFound as exc:
            raise HTTPException(404, f"{'/'.join(app)}: {exc}") from None
        return ForwardTarget(cluster=target.cluster, namespace=target.namespace,
                             pod=target.pod, port=number)

    @api.websocket(PATH)
    async def forward(websocket: WebSocket, kind: str, project: str, name: str, port: Port,
                      cluster: str | None = None, pod: str | None = None) -> None:
        """One TCP connection to ``port`` of the app's pod (docs/api/README.md: the
        frames)."""
        await _serve(websocket, (kind, project, name), port, cluster, pod, caller_of,
                     authorize, pods_of)


async def _target(gateway: Any, app: AppKey, cluster: str | None, pod: str | None,
                  pods_of: PodsOf) -> tuple[PodList, ExecTarget]:
    try:
        pods = await run_in_threadpool(pods_of, gateway, app, cluster)
        return pods, pick_pod(pods, cluster, pod)
    except NotFound as exc:
        raise HTTPException(404, f"{'/'.join(app)}: {exc}") from None
    except NoRunningPod as exc:
        raise HTTPException(409, f"{'/'.join(app)}: {exc}") from None


async def _serve(websocket: WebSocket, app: AppKey, port: int, cluster: str | None,
                 pod: str | None, caller_of: Callable[[HTTPConnection], Awaitable[Caller]],
                 authorize: Authorize, pods_of: PodsOf) -> None:
    """Authenticate and authorize the handshake, pick the pod, take one of the caller's
    connections, open the member's port-forward and pass bytes until it ends; a refusal
    is the handshake's HTTP answer. One audit line either way."""
    path, caller = websocket.url.path, None
    gateway = websocket.app.state.gateway
    try:
        caller = await caller_of(websocket)
        await authorize(websocket, caller, "exec", app[0], app[1])
        _, target = await _target(gateway, app, cluster, pod, pods_of)
        upstream = await _open(gateway, caller, target, port)
    except (AccessError, HTTPException) as exc:
        await deny(websocket, caller, exc, port=port)
        return
    loop = asyncio.get_running_loop()
    started = loop.time()

    def end() -> None:
        upstream.abort()
        gateway.forward_sessions.give_back(caller.user)

    ending = await accepted(websocket, SUBPROTOCOL,
                            {"type": "target", **target.document(), "port": port},
                            lambda: run_forward(websocket, upstream, gateway.forward_limits,
                                                f"{target.cluster}/{target.pod}"), end)
    document = target.document()
    document.pop("container")
    audit(caller, "GET", path, 101, **document, port=port, ended=ending.reason,
          seconds=round(loop.time() - started, 3))


async def _open(gateway: Any, caller: Caller, target: ExecTarget, port: int) -> Upstream:
    limits = gateway.forward_limits
    return await open_member(
        gateway.pods, target.cluster, gateway.forward_sessions, caller.user,
        f"{caller.user} has {limits.connections_per_user} forwarded connections open "
        "already", lambda connection: open_upstream(connection, target, port,
                                                    limits.connect_seconds),
        f"{target.cluster} did not forward port {port} of {target.namespace}/{target.pod}")
