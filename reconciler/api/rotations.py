"""The API's node rotations of a member cluster (``pincompile rotate``):

* ``POST /api/v1/clusters/{name}/rotation?pool=&batch=&pause=``: request a rotation —
  the request is an annotation on the Cluster's resource on the host
  (:data:`~reconciler.rotation.plan.REQUEST_ANNOTATION`, a field manager of its own);
  ``serve``'s leader of the cluster's shard runs it and keeps its progress in the
  Cluster's ``status.rotation``. 409 while another one is not complete.
* ``GET .../rotation``: the request, who paused it, and the progress.
* ``POST .../rotation/pause`` and ``.../rotation/resume``: an annotation naming who paused
  it; while it is there the batch under way finishes and no new one starts.

Authorized on the host like every call (:func:`may`): ``update`` on ``clusters/rotation``
of ``pincompute.io`` to change, ``get`` on ``clusters`` to read. The console's member
panel runs the same functions (:func:`start`, :func:`set_paused`) behind the same check.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import ValidationError

from pincompile.contract import RotationPolicy, duration_seconds
from reconciler.api.access import Access, Caller, allowed
from reconciler.api.insight import CLUSTER_KIND
from reconciler.api.models import Problem
from reconciler.api.rotation_models import RotationAnswer
from reconciler.clients import read, write
from reconciler.clients.connect import Connection
from reconciler.clock import iso_time
from reconciler.errors import CLUSTER_ERRORS, explain
from reconciler.host import API_VERSION
from reconciler.model import Obj
from reconciler.rotation import plan

PATH = "/api/v1/clusters/{name}/rotation"
MAX_NAME = 253
PAUSE_MAX = 20
"""Characters of a ``pause`` accepted."""


def _ref(name: str) -> Obj:
    return {"apiVersion": API_VERSION, "kind": CLUSTER_KIND, "metadata": {"name": name}}


def _cluster(host: Connection, name: str) -> Obj:
    try:
        found = read.get(host, _ref(name))
    except CLUSTER_ERRORS as exc:
        raise HTTPException(503, f"the host cluster: {explain(exc)}") from None
    if found is None:
        raise HTTPException(404, f"no member cluster {name!r} on the host")
    return found


def _apply(host: Connection, name: str, annotations: dict[str, str], manager: str) -> None:
    """Server-side apply of ``annotations`` on the Cluster with ``manager`` (an empty
    mapping removes what that manager set)."""
    body = _ref(name)
    body["metadata"]["annotations"] = annotations
    try:
        write.apply(host, body, manager=manager)
    except CLUSTER_ERRORS as exc:
        raise HTTPException(503, f"the host cluster: {explain(exc)}") from None


def describe(name: str, cr: Obj, user: str = "", message: str = "") -> RotationAnswer:
    """What the API answers about ``name``'s rotation."""
    annotations = (cr.get("metadata") or {}).get("annotations") or {}
    try:
        request = plan.parse_request(annotations.get(plan.REQUEST_ANNOTATION))
    except plan.RequestError as exc:
        raise HTTPException(409, str(exc)) from None
    status = (cr.get("status") or {}).get("rotation") or None
    return RotationAnswer(cluster=name, user=user, message=message,
                          request=request.__dict__ if request else None,
                          pausedBy=annotations.get(plan.PAUSED_BY_ANNOTATION) or None,
                          status=status)


def running(cr: Obj) -> str | None:
    """Why a new rotation cannot start now (one is requested and not complete)."""
    answer = describe(str(cr["metadata"]["name"]), cr)
    if answer.request is None:
        return None
    status = answer.status or {}
    if status.get("id") != answer.request["id"]:
        return (f"rotation {answer.request['id']} was requested and has not started yet "
                "(serve's leader of the cluster's shard starts it)")
    if status.get("phase") != "Complete":
        left = sum(1 for n in status.get("nodes") or [] if n.get("state") != "Replaced")
        return (f"rotation {status['id']} is {status.get('phase')}: {left} of "
                f"{len(status.get('nodes') or [])} node(s) left")
    return None


def start(host: Connection | None, name: str, user: str, pool: str | None,
          batch: int | None, pause: str | None) -> RotationAnswer:
    """Write a rotation request on the Cluster (409 while another one runs)."""
    host = _host(host)
    cr = _cluster(host, name)
    busy = running(cr)
    if busy is not None:
        raise HTTPException(409, busy)
    request = plan.Request(id=f"{iso_time(time.time())}-{uuid.uuid4().hex[:6]}", by=user,
                           pool=pool or "", batch=batch, pause=pause)
    _apply(host, name, {plan.REQUEST_ANNOTATION: request.to_json()}, plan.REQUEST_MANAGER)
    paused = describe(name, cr).pausedBy
    message = (f"rotation {request.id} of {name} requested: serve's leader of its shard "
               f"starts it within seconds; `pincompile rotate {name} --status` follows it")
    if paused:
        message += f" (paused by {paused}: `pincompile rotate {name} --resume` lets it start)"
    return describe(name, _cluster(host, name), user, message)


def set_paused(host: Connection | None, name: str, user: str, paused: bool
               ) -> RotationAnswer:
    host = _host(host)
    cr = _cluster(host, name)
    now = describe(name, cr)
    if paused and running(cr) is None:
        raise HTTPException(409, f"no rotation of {name} is in progress")
    if paused == bool(now.pausedBy):
        message = (f"the rotation of {name} is paused already (by {now.pausedBy})" if paused
                   else f"the rotation of {name} is not paused")
        return describe(name, cr, user, message)
    _apply(host, name, {plan.PAUSED_BY_ANNOTATION: user} if paused else {},
           plan.PAUSE_MANAGER)
    message = (f"rotation paused by {user}: the batch under way finishes, no new one starts"
               if paused else f"rotation resumed by {user} (paused by {now.pausedBy})")
    return describe(name, _cluster(host, name), user, message)


def _host(host: Connection | None) -> Connection:
    if host is None:
        raise HTTPException(503, "rotations need the host cluster (serve --host-context)")
    return host


async def may(access: Access, who: Caller, action: str, name: str) -> bool:
    """Whether ``who`` may ``action`` (``read``, ``rotate``) the rotation of cluster
    ``name``: the host's RBAC on ``clusters`` of ``pincompute.io`` (the API's routes and the
    console's buttons ask this)."""
    return len(name) <= MAX_NAME and await allowed(access, who, action, CLUSTER_KIND, "")


def checked_pause(value: str | None) -> str | None:
    """``value`` when it is a duration of at most a day (422 otherwise)."""
    if value is None:
        return None
    try:
        RotationPolicy.model_validate({"pause": value})
    except ValidationError:
        raise HTTPException(422, f"pause: {value!r} is not a duration (examples: 30s, 2m, "
                                 "1h)") from None
    if duration_seconds(value) > 86400:
        raise HTTPException(422, f"pause: {value} is longer than 24h")
    return value


def mount_rotations(api: FastAPI, caller: Callable[..., Awaitable[Caller]]) -> None:
    """Add the rotation routes to the API's app (``caller`` authenticates and rate-limits;
    each route authorizes on the host's Cluster resource)."""
    router = APIRouter(dependencies=[Depends(caller)],
                       responses={404: {"model": Problem}, 409: {"model": Problem}})

    async def authorized(request: Request, action: str, name: str) -> tuple[Any, str]:
        who: Caller = request.state.caller
        gateway = request.app.state.gateway
        if not await may(gateway.access, who, action, name):
            raise HTTPException(403, f"{who.user} may not {action} cluster {name[:MAX_NAME]}")
        return gateway, who.user

    @router.get(PATH, response_model=RotationAnswer,
                summary="A member cluster's node rotation: request and progress (verb: get "
                        "clusters)")
    async def get_rotation(request: Request, name: str) -> RotationAnswer:
        gateway, user = await authorized(request, "read", name)
        return await run_in_threadpool(
            lambda: describe(name, _cluster(_host(gateway.host), name), user))

    @router.post(PATH, status_code=202, response_model=RotationAnswer,
                 summary="Replace every node of a member cluster, batch by batch (verb: "
                         "update clusters/rotation)")
    async def rotate(request: Request, name: str,
                     pool: Annotated[str | None, Query(max_length=63)] = None,
                     batch: Annotated[int | None, Query(ge=1, le=plan.MAX_BATCH)] = None,
                     pause: Annotated[str | None, Query(max_length=PAUSE_MAX)] = None
                     ) -> RotationAnswer:
        gateway, user = await authorized(request, "rotate", name)
        checked = checked_pause(pause)
        return await run_in_threadpool(start, gateway.host, name, user, pool, batch, checked)

    @router.post(f"{PATH}/pause", response_model=RotationAnswer,
                 summary="Pause a rotation after its batch under way (verb: update "
                         "clusters/rotation)")
    async def pause_rotation(request: Request, name: str) -> RotationAnswer:
        gateway, user = await authorized(request, "rotate", name)
        return await run_in_threadpool(set_paused, gateway.host, name, user, True)

    @router.post(f"{PATH}/resume", response_model=RotationAnswer,
                 summary="Resume a paused rotation (verb: update clusters/rotation)")
    async def resume_rotation(request: Request, name: str) -> RotationAnswer:
        gateway, user = await authorized(request, "rotate", name)
        return await run_in_threadpool(set_paused, gateway.host, name, user, False)

    api.include_router(router)
