"""The ASGI app: ``create_app(...)`` wires the routes to an app source, the store and
access control. Every call under ``/api/v1`` needs a bearer token (401), is authorized
per app kind and project (403), rate-limited per user (429 with Retry-After) and audited.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Annotated, Protocol

from fastapi import (
    Depends,
    FastAPI,
    HTTPException,
    Query,
    Request,
    Response,
    WebSocket,
)
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError, WebSocketRequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.requests import HTTPConnection

from pincompile.contract import MAX_SELECTOR_LENGTH as MAX_SELECTOR
from pincompile.contract import Labels, SelectorError, parse_selector
from reconciler.api.access import (
    REVIEWS,
    Access,
    AccessError,
    Audited,
    Caller,
    RateLimits,
    allowed,
    audit,
    authenticate,
)
from reconciler.api.actions import Operations, mount_actions
from reconciler.api.cost_routes import mount_cost
from reconciler.api.exec import Upstream, accepted, deny, open_member, run_session
from reconciler.api.exec_protocol import (
    SUBPROTOCOL,
    ExecLimits,
    ExecQuery,
    ExecTarget,
    NoRunningPod,
    NotFound,
    check_command,
    pick_target,
)
from reconciler.api.forecast_routes import mount_forecast
from reconciler.api.forward_protocol import ForwardLimits
from reconciler.api.forward_routes import mount_forward
from reconciler.api.index import AppEntry, AppIndex, AppSource, list_json
from reconciler.api.insight import mount_insight
from reconciler.api.logs import (
    LogLimits,
    LogQuery,
    MergedLogs,
    StreamSlots,
    TooMany,
    log_targets,
    pod_log_opener,
)
from reconciler.api.models import (
    AppDetail,
    AppList,
    PodList,
    Problem,
)
from reconciler.api.reads import mount_reads
from reconciler.api.rotations import mount_rotations
from reconciler.api.spec_edits import mount_spec_answers
from reconciler.api.timeline import ClustersTimeline
from reconciler.clients.connect import Connection
from reconciler.insight.live import InsightSource
from reconciler.model import AppKey
from reconciler.slo.routes import mount_slo_routes
from reconciler.status.document import APP_KINDS

if TYPE_CHECKING:
    from reconciler.store import Store

PREFIX = "/api/v1"
PAGE_MAX = 500


class PodSource(Protocol):
    """Every app's pods in the member clusters, kept current by watches, and the member
    connections their logs are read through (:class:`reconciler.api.pods.MemberPods`)."""

    def pods(self, app: AppKey, clusters: Iterable[str]) -> PodList: ...

    def connection(self, cluster: str) -> Connection | None: ...

    def connect(self, clusters: Iterable[str]) -> dict[str, Connection | str]: ...


@dataclass
class Gateway:
    apps: AppSource
    store: Store
    access: Access
    limits: RateLimits
    pods: PodSource | None = None
    """None: no member cluster can be read (pods and logs answer 503)."""
    log_limits: LogLimits = field(default_factory=LogLimits)
    host: Connection | None = None
    """Where actions write (pause annotations); None: actions answer 503."""
    operations: Operations = field(default_factory=Operations)
    """Restarts running in this server."""
    exec_limits: ExecLimits = field(default_factory=ExecLimits)
    forward_limits: ForwardLimits = field(default_factory=ForwardLimits)
    reviews: RateLimits = field(default_factory=lambda: RateLimits(*REVIEWS))
    """Host reviews of tokens not known yet, per client address."""
    insight: InsightSource | None = None
    """Projects, clusters and the members' nodes and pods (None: those calls answer 503)."""
    timeline: ClustersTimeline | None = None
    """Reads an app's Events from the clusters when asked (a one-shot command); None: the
    store has them (``serve``'s collector)."""
    store_read: bool = True
    """False: ``store`` is a throwaway one (a one-shot command without ``--store``), so
    events and history come from the clusters and the apps' statuses alone."""

    def __post_init__(self) -> None:
        self.index = AppIndex(self.apps)
        self.log_streams = StreamSlots(self.log_limits.streams_per_user)
        self.exec_sessions = StreamSlots(self.exec_limits.sessions_per_user)
        self.forward_sessions = StreamSlots(self.forward_limits.connections_per_user)


def create_app(gateway: Gateway | None) -> FastAPI:
    """The API's app; with no gateway (no host cluster) every API call answers 503."""
    api = FastAPI(title="PinCompute API", version="1",
                  openapi_url=f"{PREFIX}/openapi.json", docs_url=None, redoc_url=None,
                  responses={code: {"model": Problem} for code in (401, 403, 429, 503)})
    api.state.gateway = gateway
    api.add_middleware(Audited, audited=lambda path: path.startswith(PREFIX)
                       and path != api.openapi_url)

    @api.exception_handler(AccessError)
    async def refused(_request: Request, exc: AccessError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=exc.status, headers=exc.headers)

    @api.exception_handler(RequestValidationError)
    async def invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        """422 naming each field; the value sent is not echoed (a NaN cannot be)."""
        return JSONResponse({"detail": [{"loc": list(e["loc"]), "msg": e["msg"],
                                         "type": e["type"]} for e in exc.errors()]}, 422)

    @api.exception_handler(WebSocketRequestValidationError)
    async def invalid_websocket(websocket: WebSocket, exc: WebSocketRequestValidationError
                                ) -> JSONResponse:  # a 422 like HTTP calls, not a 403
        audit(None, "GET", websocket.url.path, 422)
        return JSONResponse({"detail": [dict(e) for e in exc.errors()]}, status_code=422)

    _routes(api)
    mount_reads(api, caller_of, _authorize)
    mount_actions(api, caller_of, _authorize)
    mount_spec_answers(api, caller_of, _authorize)
    mount_slo_routes(api, caller_of)
    mount_rotations(api, caller_of)
    mount_insight(api, caller_of)
    mount_cost(api, caller_of)
    mount_forecast(api, caller_of)
    return api


async def caller_of(request: HTTPConnection) -> Caller:
    """The authenticated, rate-limited caller of a request (or a WebSocket's handshake)."""
    gateway: Gateway | None = request.app.state.gateway
    if gateway is None:
        raise AccessError(503, "the API needs the host cluster (serve --host-context)")
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise AccessError(401, "send a bearer token: Authorization: Bearer TOKEN")
    return await caller_with_token(request, gateway, token.strip())


async def caller_with_token(request: HTTPConnection, gateway: Gateway, token: str) -> Caller:
    """The caller ``token`` authenticates, rate-limited (the console passes its cookie's)."""
    caller = await token_caller(request, gateway, token)
    request.state.caller = caller
    wait = gateway.limits.retry_after(caller)
    if wait:
        raise HTTPException(429, f"rate limit of {gateway.limits.qps:g} calls/s exceeded",
                            headers={"Retry-After": str(max(1, round(wait + 0.5)))})
    return caller


async def token_caller(request: HTTPConnection, gateway: Gateway, token: str) -> Caller:
    """Who ``token`` is, asking the host only within the client address's budget of
    reviews (AccessError 401, 429, 503)."""
    return await authenticate(gateway.access, token, client=client_address(request),
                              reviews=gateway.reviews)


def client_address(request: HTTPConnection) -> str:
    """The client's address (a configured proxy's ``X-Forwarded-For`` already applied)."""
    return request.client.host if request.client else ""


CallerDep = Annotated[Caller, Depends(caller_of)]


async def _authorize(request: HTTPConnection, caller: Caller, action: str, kind: str,
                     project: str) -> None:
    gateway: Gateway = request.app.state.gateway
    if kind not in APP_KINDS:
        raise HTTPException(404, f"no app kind {kind!r}; one of {', '.join(sorted(APP_KINDS))}")
    if not await allowed(gateway.access, caller, action, kind, project):
        raise HTTPException(403, f"{caller.user} may not {action} {kind} in project {project}")


def _routes(api: FastAPI) -> None:
    @api.get(f"{PREFIX}/apps", response_model=AppList, response_model_by_alias=True,
             responses={400: {"model": Problem}},
             summary="List apps the caller may see, filtered and paged")
    async def list_apps(request: Request, caller: CallerDep,
                        project: Annotated[list[str] | None, Query()] = None,
                        kind: Annotated[list[str] | None, Query()] = None,
                        phase: Annotated[list[str] | None, Query()] = None,
                        cluster: Annotated[list[str] | None, Query()] = None,
                        selector: Annotated[str | None, Query(
                            description="a label selector on the labels of the app's spec "
                                        "(team=search,env!=prod,tier in (a,b),!legacy)",
                            max_length=MAX_SELECTOR)] = None,
                        limit: Annotated[int, Query(ge=1, le=PAGE_MAX)] = 100,
                        continue_: Annotated[str | None, Query(alias="continue")] = None,
                        ) -> Response:
        """Each of ``project``, ``kind``, ``phase`` and ``cluster`` may be given several
        times: an app matches one of its values (and every filter given)."""
        gateway: Gateway = request.app.state.gateway
        after = _decode(continue_) if continue_ else None
        labels = _selector(selector) if selector else None
        projects, kinds, phases = set(project or ()), set(kind or ()), set(phase or ())
        clusters = set(cluster or ())
        visible: dict[tuple[str, str], bool] = {}
        items: list[AppEntry] = []
        one = next(iter(projects)) if len(projects) == 1 else None
        for entry in gateway.index.snapshot().after(after, one):
            kind_of, project_of, _ = entry.key
            if not ((not projects or project_of in projects)
                    and (not kinds or kind_of in kinds)
                    and (not phases or entry.phase in phases)
                    and (not clusters or not clusters.isdisjoint(entry.clusters))
                    and (labels is None or labels(entry.labels))):
                continue
            scope = (kind_of, project_of)
            if scope not in visible:
                visible[scope] = await allowed(gateway.access, caller, "list", *scope)
            if visible[scope]:
                items.append(entry)
                if len(items) > limit:
                    break
        last = items[limit - 1].key if len(items) > limit else None
        return Response(list_json(items[:limit], _encode(last) if last else None),
                        media_type="application/json")

    @api.get(f"{PREFIX}/apps/{{kind}}/{{project}}/{{name}}", response_model=AppDetail,
             responses={404: {"model": Problem}}, summary="One app in every cluster")
    async def get_app(request: Request, caller: CallerDep, kind: str, project: str,
                      name: str) -> Response:
        await _authorize(request, caller, "read", kind, project)
        entry = request.app.state.gateway.index.snapshot().by_key.get((kind, project, name))
        if entry is None:
            raise HTTPException(404, f"{kind}/{project}/{name} not found")
        return Response(entry.detail_json, media_type="application/json")

    _pod_routes(api)
    _exec_route(api)
    mount_forward(api, caller_of, _authorize, app_pods)


def app_pods(gateway: Gateway, app: AppKey, cluster: str | None = None) -> PodList:
    """``app``'s pods in every member cluster (or in ``cluster`` alone; HTTPException
    404/503 when it cannot say)."""
    status = gateway.apps.statuses().get(app)
    if status is None:
        raise HTTPException(404, f"{'/'.join(app)} not found")
    if gateway.pods is None:
        raise HTTPException(503, "the API cannot read the member clusters")
    return gateway.pods.pods(app, [str(c.get("name")) for c in status.get("clusters") or []
                                   if cluster is None or c.get("name") == cluster])


def _pod_routes(api: FastAPI) -> None:
    @api.get(f"{PREFIX}/apps/{{kind}}/{{project}}/{{name}}/pods", response_model=PodList,
             responses={404: {"model": Problem}},
             summary="The app's pods in every member cluster, from a watch")
    async def pods(request: Request, caller: CallerDep, kind: str, project: str,
                   name: str) -> PodList:
        await _authorize(request, caller, "read", kind, project)
        return await run_in_threadpool(app_pods, request.app.state.gateway,
                                       (kind, project, name))

    @api.get(f"{PREFIX}/apps/{{kind}}/{{project}}/{{name}}/logs",
             response_class=StreamingResponse,
             responses={200: {"content": {"text/plain": {}},
                              "description": "lines as `cluster/pod/container line`"},
                        400: {"model": Problem}, 404: {"model": Problem},
                        429: {"model": Problem}},
             summary="The app's container logs, merged across pods and clusters")
    async def logs(request: Request, caller: CallerDep, kind: str, project: str, name: str,
                   container: str | None = None,
                   tailLines: Annotated[int | None, Query(ge=0, le=100_000)] = None,
                   sinceSeconds: Annotated[int | None, Query(ge=1)] = None,
                   follow: bool = False, cluster: str | None = None, pod: str | None = None,
                   timestamps: bool = False, allContainers: bool = False) -> StreamingResponse:
        await _authorize(request, caller, "logs", kind, project)
        gateway: Gateway = request.app.state.gateway
        query = LogQuery(container, tailLines, sinceSeconds, follow, cluster, pod, timestamps,
                         allContainers)
        found = await run_in_threadpool(app_pods, gateway, (kind, project, name))
        try:
            targets = log_targets(found, query, gateway.log_limits.containers)
        except TooMany as exc:
            raise HTTPException(400, str(exc)) from None
        if not targets:
            names = sorted({c.name for p in found.items for c in p.containers})
            raise HTTPException(404, f"no container of {kind}/{project}/{name} matches"
                                + (f" (its pods have: {', '.join(names)})" if names else
                                   " (it has no pods)"))
        if not gateway.log_streams.take(caller.user):
            raise HTTPException(429, f"{caller.user} has {gateway.log_limits.streams_per_user}"
                                     " log streams open already", headers={"Retry-After": "5"})
        assert gateway.pods is not None  # app_pods said so
        merged = MergedLogs(targets, pod_log_opener(gateway.pods.connection, query,
                                                    gateway.log_limits.seconds),
                            gateway.log_limits, still_allowed=lambda: allowed(
                                gateway.access, caller, "logs", kind, project))

        async def body() -> AsyncIterator[bytes]:
            try:
                async for line in merged.lines():
                    yield line
            finally:
                merged.close()
                gateway.log_streams.give_back(caller.user)

        return StreamingResponse(body(), media_type="text/plain; charset=utf-8",
                                 headers={"X-Content-Type-Options": "nosniff",
                                          "Cache-Control": "no-store"})


def _exec_route(api: FastAPI) -> None:
    @api.websocket(f"{PREFIX}/apps/{{kind}}/{{project}}/{{name}}/exec")
    async def exec_(websocket: WebSocket, kind: str, project: str, name: str,
                    command: Annotated[list[str] | None, Query()] = None,
                    container: str | None = None, cluster: str | None = None,
                    pod: str | None = None, stdin: bool = False, tty: bool = False) -> None:
        """A command in a container of the app (docs/api/README.md: the frames)."""
        query = ExecQuery(tuple(command or ()), container, cluster, pod, stdin, tty)
        await serve_exec(websocket, (kind, project, name), query, caller_of)


async def serve_exec(websocket: WebSocket, app: AppKey, query: ExecQuery,
                     authenticate: Callable[[WebSocket], Awaitable[Caller]]) -> None:
    """One exec session on ``websocket``: ``authenticate`` its handshake (the API: a bearer
    header; the console: its cookie session), authorize ``exec``, start the command on the
    member API server and pass frames until it ends. A refusal is the handshake's HTTP
    answer; either way one audit line."""
    path, caller = websocket.url.path, None
    try:
        caller = await authenticate(websocket)
        upstream, target = await _open_exec(websocket, caller, app, query)
    except (AccessError, HTTPException) as exc:
        await deny(websocket, caller, exc, command=list(query.command)[:20])
        return
    gateway: Gateway = websocket.app.state.gateway
    started = asyncio.get_running_loop().time()

    def end() -> None:
        upstream.abort()
        gateway.exec_sessions.give_back(caller.user)

    ending = await accepted(websocket, SUBPROTOCOL, {"type": "target", **target.document()},
                            lambda: run_session(websocket, upstream, query,
                                                gateway.exec_limits,
                                                f"{target.cluster}/{target.pod}"), end)
    audit(caller, "GET", path, 101, **target.document(), command=list(query.command),
          tty=query.tty, ended=ending.reason, exitCode=ending.exit_code,
          seconds=round(asyncio.get_running_loop().time() - started, 3))


async def _open_exec(websocket: WebSocket, caller: Caller, app: AppKey, query: ExecQuery
                     ) -> tuple[Upstream, ExecTarget]:
    """Authorize, pick the container, take one of the caller's sessions and start the
    exec on the member API server; HTTPException otherwise."""
    await _authorize(websocket, caller, "exec", app[0], app[1])
    gateway: Gateway = websocket.app.state.gateway
    try:
        check_command(query.command, gateway.exec_limits)
        target = pick_target(await run_in_threadpool(app_pods, gateway, app), query)
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None
    except NotFound as exc:
        raise HTTPException(404, f"{'/'.join(app)}: {exc}") from None
    except NoRunningPod as exc:
        raise HTTPException(409, f"{'/'.join(app)}: {exc}") from None
    upstream = await open_member(
        gateway.pods, target.cluster, gateway.exec_sessions, caller.user,
        f"{caller.user} has {gateway.exec_limits.sessions_per_user} exec sessions open "
        "already", lambda connection: Upstream.open(connection, target, query,
                                                    gateway.exec_limits.connect_seconds),
        f"{target.cluster} did not start the exec in {target.namespace}/{target.pod}")
    return upstream, target


@lru_cache(maxsize=256)
def _parsed(text: str) -> Callable[[Labels], bool] | str:
    """A selector's predicate, or why it is not one (parsed once per distinct text)."""
    try:
        return parse_selector(text)
    except SelectorError as exc:
        return str(exc)


def _selector(text: str) -> Callable[[Labels], bool]:
    predicate = _parsed(text)
    if isinstance(predicate, str):
        raise HTTPException(400, f"selector: {predicate}")
    return predicate


def _encode(key: AppKey) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(key)).encode()).decode()


def _decode(token: str) -> AppKey:
    try:
        kind, project, name = json.loads(base64.urlsafe_b64decode(token.encode()))
        return str(kind), str(project), str(name)
    except (ValueError, TypeError, binascii.Error):
        raise HTTPException(400, "continue: not a token this API gave out") from None
