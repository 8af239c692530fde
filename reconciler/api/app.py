"""The ASGI app: ``create_app(...)`` wires the routes to an app source, the store and
access control. Every call under ``/api/v1`` needs a bearer token (401), is authorized
per app kind and project (403), rate-limited per user (429 with Retry-After) and audited.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Protocol

from fastapi import Depends, FastAPI, HTTPException, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from reconciler.api.access import Access, AccessError, Caller, RateLimits, audit
from reconciler.api.models import AppDetail, AppEvent, AppList, AppRevision, AppSummary, Problem
from reconciler.status import APP_KINDS, AppKey
from reconciler.store import Store

PREFIX = "/api/v1"
PAGE_MAX = 500


class AppSource(Protocol):
    """Every app's last status on the host, kept current by a watch (no request per call)."""

    def statuses(self) -> Mapping[AppKey, Mapping[str, Any]]: ...


@dataclass
class Gateway:
    apps: AppSource
    store: Store
    access: Access
    limits: RateLimits


def create_app(gateway: Gateway | None) -> FastAPI:
    """The API's app; with no gateway (no host cluster) every API call answers 503."""
    api = FastAPI(title="PinCompute API", version="1",
                  openapi_url=f"{PREFIX}/openapi.json", docs_url=None, redoc_url=None,
                  responses={code: {"model": Problem} for code in (401, 403, 429, 503)})
    api.state.gateway = gateway

    @api.middleware("http")
    async def audited(request: Request,
                      call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        response = await call_next(request)
        if request.url.path.startswith(PREFIX) and request.url.path != api.openapi_url:
            audit(getattr(request.state, "caller", None), request.method, request.url.path,
                  response.status_code)
        return response

    @api.exception_handler(AccessError)
    async def refused(_request: Request, exc: AccessError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=exc.status,
                            headers={"WWW-Authenticate": "Bearer"} if exc.status == 401 else {})

    _routes(api)
    return api


async def caller_of(request: Request) -> Caller:
    """The authenticated, rate-limited caller of a request."""
    gateway: Gateway | None = request.app.state.gateway
    if gateway is None:
        raise AccessError(503, "the API needs the host cluster (serve --host-context)")
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise AccessError(401, "send a bearer token: Authorization: Bearer TOKEN")
    caller = await run_in_threadpool(gateway.access.authenticate, token.strip())
    request.state.caller = caller
    wait = gateway.limits.retry_after(caller)
    if wait:
        raise HTTPException(429, f"rate limit of {gateway.limits.qps:g} calls/s exceeded",
                            headers={"Retry-After": str(max(1, round(wait + 0.5)))})
    return caller


CallerDep = Annotated[Caller, Depends(caller_of)]


async def _authorize(request: Request, caller: Caller, action: str, kind: str,
                     project: str) -> None:
    gateway: Gateway = request.app.state.gateway
    if kind not in APP_KINDS:
        raise HTTPException(404, f"no app kind {kind!r}; one of {', '.join(sorted(APP_KINDS))}")
    if not await run_in_threadpool(gateway.access.allowed, caller, action, kind, project):
        raise HTTPException(403, f"{caller.user} may not {action} {kind} in project {project}")


def _routes(api: FastAPI) -> None:
    @api.get(f"{PREFIX}/apps", response_model=AppList, response_model_by_alias=True,
             summary="List apps the caller may see, filtered and paged")
    async def list_apps(request: Request, caller: CallerDep, project: str | None = None,
                        kind: str | None = None, phase: str | None = None,
                        cluster: str | None = None,
                        limit: Annotated[int, Query(ge=1, le=PAGE_MAX)] = 100,
                        continue_: Annotated[str | None, Query(alias="continue")] = None,
                        ) -> AppList:
        gateway: Gateway = request.app.state.gateway
        after = _decode(continue_) if continue_ else None
        rows = sorted((key, status) for key, status in gateway.apps.statuses().items()
                      if _matches(key, status, project, kind, phase, cluster)
                      and (after is None or key > after))
        visible: dict[tuple[str, str], bool] = {}
        items: list[AppSummary] = []
        for key, status in rows:
            scope = (key[0], key[1])
            if scope not in visible:
                visible[scope] = await run_in_threadpool(
                    gateway.access.allowed, caller, "list", *scope)
            if visible[scope]:
                items.append(AppSummary(**_document(key, status)))
                if len(items) > limit:
                    break
        more = len(items) > limit
        items = items[:limit]
        last = items[-1] if more else None
        return AppList.model_validate({"items": items, "continue": _encode(
            (last.kind, last.project, last.name)) if last else None})

    @api.get(f"{PREFIX}/apps/{{kind}}/{{project}}/{{name}}", response_model=AppDetail,
             responses={404: {"model": Problem}}, summary="One app in every cluster")
    async def get_app(request: Request, caller: CallerDep, kind: str, project: str,
                      name: str) -> AppDetail:
        await _authorize(request, caller, "read", kind, project)
        status = request.app.state.gateway.apps.statuses().get((kind, project, name))
        if status is None:
            raise HTTPException(404, f"{kind}/{project}/{name} not found")
        return AppDetail(**_document((kind, project, name), status))

    @api.get(f"{PREFIX}/apps/{{kind}}/{{project}}/{{name}}/events",
             response_model=list[AppEvent], summary="The app's timeline, oldest first")
    async def events(request: Request, caller: CallerDep, kind: str, project: str, name: str,
                     since: datetime | None = None,
                     limit: Annotated[int, Query(ge=1, le=1000)] = 500) -> list[AppEvent]:
        await _authorize(request, caller, "read", kind, project)
        store: Store = request.app.state.gateway.store
        rows = await run_in_threadpool(store.events, (kind, project, name), since=since,
                                       limit=limit)
        return [AppEvent(time=r.last_seen, firstSeen=r.first_seen or r.last_seen,
                         count=r.count, cluster=r.cluster, source=r.source,
                         type="Warning" if r.warning else "Normal", reason=r.reason,
                         message=r.message, object=r.object) for r in rows]

    @api.get(f"{PREFIX}/apps/{{kind}}/{{project}}/{{name}}/history",
             response_model=list[AppRevision], summary="Revisions applied, newest first")
    async def history(request: Request, caller: CallerDep, kind: str, project: str,
                      name: str, limit: Annotated[int, Query(ge=1, le=1000)] = 100,
                      ) -> list[AppRevision]:
        await _authorize(request, caller, "read", kind, project)
        store: Store = request.app.state.gateway.store
        rows = await run_in_threadpool(store.history, (kind, project, name), limit=limit)
        return [AppRevision(revision=r.revision, appliedAt=r.applied_at, result=r.result,
                            commit=r.commit, author=r.author, push=r.push, detail=r.detail)
                for r in rows]


def _matches(key: AppKey, status: Mapping[str, Any], project: str | None, kind: str | None,
             phase: str | None, cluster: str | None) -> bool:
    return ((project is None or key[1] == project) and (kind is None or key[0] == kind)
            and (phase is None or status.get("phase") == phase)
            and (cluster is None or any(c.get("name") == cluster
                                        for c in status.get("clusters") or [])))


def _document(key: AppKey, status: Mapping[str, Any]) -> dict[str, Any]:
    kind, project, name = key
    return {**{k: v for k, v in status.items() if k in AppDetail.model_fields},
            "kind": kind, "project": project, "name": name,
            "phase": status.get("phase", "Unknown"), "ready": status.get("ready", "0/0")}


def _encode(key: AppKey) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(key)).encode()).decode()


def _decode(token: str) -> AppKey:
    try:
        kind, project, name = json.loads(base64.urlsafe_b64decode(token.encode()))
        return str(kind), str(project), str(name)
    except (ValueError, TypeError, binascii.Error):
        raise HTTPException(400, "continue: not a token this API gave out") from None
