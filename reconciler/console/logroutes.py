"""The console's log routes, authorized with the API's logs verb (``get`` on the app
kind's ``logs`` subresource in its project):

- ``GET /apps/KIND/PROJECT/NAME/logs``: a page with the last lines (works without
  JavaScript);
- ``GET /apps/KIND/PROJECT/NAME/logs/stream``: the lines as they come (plain text, each
  ``cluster/pod/container line``), which the app page's script follows.
"""

from __future__ import annotations

from fastapi import FastAPI, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from starlette.responses import PlainTextResponse, Response, StreamingResponse

from reconciler.api.access import Caller
from reconciler.console.logs import LogFilter, last_lines, lines, open_logs
from reconciler.console.pods import read_pods
from reconciler.console.respond import HEADERS, gateway_of, problem_page, render_page, signed_in
from reconciler.model import AppKey
from reconciler.status.document import APP_KINDS


def add_log_routes(app: FastAPI) -> None:
    app.add_api_route("/apps/{kind}/{project}/{name}/logs", log_page, methods=["GET"],
                      include_in_schema=False)
    app.add_api_route("/apps/{kind}/{project}/{name}/logs/stream", log_stream,
                      methods=["GET"], include_in_schema=False)


async def may_read_logs(request: Request, who: Caller, kind: str, project: str) -> bool:
    return kind in APP_KINDS and await run_in_threadpool(
        gateway_of(request).access.allowed, who, "logs", kind, project)


async def _refusal(request: Request, who: Caller, key: AppKey) -> tuple[int, str] | None:
    kind, project, name = key
    if kind not in APP_KINDS:
        return 404, f"no app kind {kind!r}"
    if not await may_read_logs(request, who, kind, project):
        return 403, f"{who.user} may not read the logs of {kind} apps in project {project}"
    if key not in gateway_of(request).apps.statuses():
        return 404, f"{kind}/{project}/{name} not found"
    return None


async def log_page(request: Request, kind: str, project: str, name: str) -> Response:
    who = await signed_in(request)
    if isinstance(who, Response):
        return who
    key = (kind, project, name)
    refused = await _refusal(request, who, key)
    if refused:
        return await problem_page(request, who, *refused)
    chosen = LogFilter.parse(request.query_params)
    gateway = gateway_of(request)
    try:
        shown, problem = await last_lines(gateway, who.user, key, chosen), ""
    except HTTPException as exc:
        shown, problem = [], str(exc.detail)
    pods = await run_in_threadpool(read_pods, gateway, key)
    return await render_page(request, "logs.html", who, key=key, logs=chosen, lines=shown,
                             problem=problem, pods=pods)


async def log_stream(request: Request, kind: str, project: str, name: str) -> Response:
    who = await signed_in(request)
    if isinstance(who, Response):
        return who
    key = (kind, project, name)
    refused = await _refusal(request, who, key)
    if refused:
        return PlainTextResponse(refused[1] + "\n", refused[0], headers=HEADERS)
    chosen = LogFilter.parse(request.query_params)
    gateway = gateway_of(request)
    try:
        merged = await open_logs(gateway, who.user, key, chosen, follow=True,
                                 still_allowed=lambda: may_read_logs(request, who, kind,
                                                                     project))
    except HTTPException as exc:
        return PlainTextResponse(f"{exc.detail}\n", exc.status_code,
                                 headers={**HEADERS, **(exc.headers or {})})
    return StreamingResponse(lines(gateway, who.user, merged, chosen),
                             media_type="text/plain; charset=utf-8",
                             headers={**HEADERS, "X-Accel-Buffering": "no"})
