"""The API's reads of an app beyond its document: its timeline (the store's and, in a
one-shot command, the Events the clusters hold now), its revisions (the store's and its
status's ``history``) and its objects in the member clusters with their health."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Protocol

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool

from reconciler.model import AppKey
from reconciler.store import EventRecord

from .access import Caller
from .models import AppEvent, AppRevision, ObjectList, Problem, UsageList
from .objects import Members, app_objects, project_namespace
from .timeline import ClustersTimeline, merged, revisions
from .usage import app_usage

if TYPE_CHECKING:
    from reconciler.clients.connect import Connection
    from reconciler.store import Store

    from .index import AppSource

APP_PATH = "/api/v1/apps/{kind}/{project}/{name}"
Authorize = Callable[[Request, Caller, str, str, str], Awaitable[None]]


class Gateway(Protocol):
    """What the reads use of the API's gateway (:class:`reconciler.api.app.Gateway`)."""

    @property
    def apps(self) -> AppSource: ...

    @property
    def store(self) -> Store: ...

    @property
    def store_read(self) -> bool: ...

    @property
    def timeline(self) -> ClustersTimeline | None: ...

    @property
    def pods(self) -> Any: ...

    @property
    def host(self) -> Connection | None: ...


def mount_reads(api: FastAPI, caller: Callable[..., Awaitable[Caller]],
                authorize: Authorize) -> None:
    """Add the routes to the API's app; ``caller`` authenticates and rate-limits,
    ``authorize(request, caller, action, kind, project)`` authorizes."""
    router = APIRouter(dependencies=[Depends(caller)], responses={404: {"model": Problem}})

    async def allowed(request: Request, kind: str, project: str) -> Gateway:
        await authorize(request, request.state.caller, "read", kind, project)
        gateway: Gateway = request.app.state.gateway
        return gateway

    @router.get(f"{APP_PATH}/events", response_model=list[AppEvent],
                summary="The app's timeline, oldest first: its newest `limit` events, or the "
                        "first `limit` since `since`")
    async def events(request: Request, kind: str, project: str, name: str,
                     since: datetime | None = None,
                     limit: Annotated[int, Query(ge=1, le=1000)] = 500) -> list[AppEvent]:
        gateway = await allowed(request, kind, project)
        rows = await run_in_threadpool(app_events, gateway, (kind, project, name), since,
                                       limit)
        return [AppEvent(time=r.last_seen, firstSeen=r.first_seen or r.last_seen,
                         count=r.count, cluster=r.cluster, source=r.source,
                         type="Warning" if r.warning else "Normal", reason=r.reason,
                         message=r.message, object=r.object) for r in rows]

    @router.get(f"{APP_PATH}/history", response_model=list[AppRevision],
                summary="Revisions applied, newest first")
    async def history(request: Request, kind: str, project: str, name: str,
                      limit: Annotated[int, Query(ge=1, le=1000)] = 100,
                      ) -> list[AppRevision]:
        gateway = await allowed(request, kind, project)
        app = (kind, project, name)
        status = gateway.apps.statuses().get(app)
        stored = await run_in_threadpool(gateway.store.history, app, limit=limit) \
            if gateway.store_read else []
        if status is None and not stored:
            raise HTTPException(404, f"{kind}/{project}/{name} not found")
        return [AppRevision(revision=r.revision, appliedAt=r.applied_at, result=r.result,
                            commit=r.commit, author=r.author, push=r.push, detail=r.detail)
                for r in revisions(status or {}, stored, app, limit)]

    @router.get(f"{APP_PATH}/objects", response_model=ObjectList,
                summary="The app's objects in every member cluster, each with its health")
    async def objects(request: Request, kind: str, project: str, name: str) -> ObjectList:
        gateway = await allowed(request, kind, project)
        return await run_in_threadpool(objects_of, gateway, (kind, project, name))

    @router.get(f"{APP_PATH}/top", response_model=UsageList,
                summary="What the app's pods use now against their requests (metrics API)")
    async def top(request: Request, kind: str, project: str, name: str) -> UsageList:
        gateway = await allowed(request, kind, project)
        return await run_in_threadpool(usage_of, gateway, (kind, project, name))

    api.include_router(router)


def app_events(gateway: Gateway, app: AppKey, since: datetime | None, limit: int
               ) -> list[EventRecord]:
    """``app``'s timeline: the store's, and with a timeline the Events the clusters hold
    now (HTTPException 404 when the host has no such app and the store nothing of it)."""
    status = gateway.apps.statuses().get(app)
    stored = gateway.store.events(app, since=since, limit=limit) if gateway.store_read else []
    if status is None and not stored:
        raise HTTPException(404, f"{'/'.join(app)} not found")
    if gateway.timeline is None or status is None:
        return stored
    siblings = [key[2] for key in gateway.apps.statuses() if key[1] == app[1]]
    live = gateway.timeline.events(app, [str(c.get("name")) for c in
                                         status.get("clusters") or []], siblings)
    if since is not None:
        live = [r for r in live if r.last_seen >= since]
    return merged(stored, live, limit)


def usage_of(gateway: Gateway, app: AppKey) -> UsageList:
    """What ``app``'s pods use now in every cluster it is placed in (HTTPException 404/503
    when it cannot say)."""
    connect, clusters, namespace = _placed(gateway, app)
    return app_usage(connect, app, clusters, namespace)


def objects_of(gateway: Gateway, app: AppKey) -> ObjectList:
    """``app``'s objects in every cluster it is placed in, read now (HTTPException 404/503
    when it cannot say)."""
    connect, clusters, namespace = _placed(gateway, app)
    return app_objects(connect, app, clusters, namespace)


def _placed(gateway: Gateway, app: AppKey) -> tuple[Members, list[str], str]:
    """How to reach the member clusters, those ``app`` is placed in and its project's
    namespace there; HTTPException 404 when there is no such app, 503 when the member
    clusters cannot be read."""
    status = gateway.apps.statuses().get(app)
    if status is None:
        raise HTTPException(404, f"{'/'.join(app)} not found")
    if gateway.pods is None or gateway.host is None:
        raise HTTPException(503, "the API cannot read the member clusters")
    return (gateway.pods.connect, [str(c.get("name")) for c in status.get("clusters") or []],
            project_namespace(gateway.host, app[1]))
