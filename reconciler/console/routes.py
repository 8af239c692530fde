"""The console's pages on the API's ASGI app (``mount_console``): log in and out, the
overview at ``/``, one app at ``/apps/KIND/PROJECT/NAME`` and the vendored assets at
``/static/``. Who may see what is the API's own decision (``Gateway.access``: TokenReview,
then SubjectAccessReview per kind and project), and every page is audited like an API
call. With JavaScript on, htmx refreshes the grid and the app's status every few seconds.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, urlencode

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.staticfiles import StaticFiles

from reconciler.api.access import AccessError, Caller, audit
from reconciler.api.app import Gateway
from reconciler.console import session
from reconciler.console.render import render
from reconciler.console.views import PAGE_SIZES, Filters, app_page, grid
from reconciler.status_document import APP_KINDS

REFRESH_SECONDS = 5
EVENTS_SHOWN = 200
REVISIONS_SHOWN = 50
FORM_MAX = 32 * 1024
"""Bytes of a POSTed form read (a token is at most session.TOKEN_MAX)."""
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
                               "frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
CONSOLE_PATHS = ("/", "/login", "/logout", "/apps/")


def mount_console(app: FastAPI) -> None:
    """Add the console to the API's app (``create_app``); it reads ``app.state.gateway``."""
    app.mount("/static", StaticFiles(packages=[("reconciler.console", "static")]),
              name="console-static")

    @app.middleware("http")
    async def audited(request: Request,
                      call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        response = await call_next(request)
        path = request.url.path
        if path == "/" or path.startswith(CONSOLE_PATHS[1:]):
            audit(getattr(request.state, "caller", None), request.method, path,
                  response.status_code)
        return response

    app.add_api_route("/", overview, methods=["GET"], include_in_schema=False)
    app.add_api_route("/apps/{kind}/{project}/{name}", app_view, methods=["GET"],
                      include_in_schema=False)
    app.add_api_route("/login", login_form, methods=["GET"], include_in_schema=False)
    app.add_api_route("/login", log_in, methods=["POST"], include_in_schema=False)
    app.add_api_route("/logout", log_out, methods=["POST"], include_in_schema=False)


async def overview(request: Request) -> Response:
    who = await _signed_in(request)
    if isinstance(who, Response):
        return who
    gateway = _gateway(request)
    filters = Filters.parse(request.query_params)

    def may_list(kind: str, project: str) -> bool:
        return gateway.access.allowed(who, "list", kind, project)

    page = await run_in_threadpool(grid, gateway.apps.statuses(), filters, may_list)
    partial = request.headers.get("hx-request") == "true"
    return await _page(request, "grid.html" if partial else "overview.html", who,
                       grid=page, sizes=PAGE_SIZES)


async def app_view(request: Request, kind: str, project: str, name: str) -> Response:
    who = await _signed_in(request)
    if isinstance(who, Response):
        return who
    gateway = _gateway(request)
    if kind not in APP_KINDS:
        return await _problem(request, who, 404, f"no app kind {kind!r}; one of "
                                                 f"{', '.join(sorted(APP_KINDS))}")
    if not await run_in_threadpool(gateway.access.allowed, who, "read", kind, project):
        return await _problem(request, who, 403, f"{who.user} may not read {kind} apps "
                                                 f"in project {project}")
    key = (kind, project, name)
    status = gateway.apps.statuses().get(key)
    if status is None:
        return await _problem(request, who, 404, f"{kind}/{project}/{name} not found")
    events = await run_in_threadpool(gateway.store.events, key, limit=EVENTS_SHOWN)
    history = await run_in_threadpool(gateway.store.history, key, limit=REVISIONS_SHOWN)
    return await _page(request, "app.html", who, page=app_page(key, status, events, history))


async def login_form(request: Request) -> Response:
    target = session.local_path(request.query_params.get("next", "/"))
    return await _page(request, "login.html", None, next=target, error="")


async def log_in(request: Request) -> Response:
    form = await _form(request)
    target = session.local_path(form.get("next", "/"))
    if not session.csrf_ok(request, form.get(session.CSRF_FIELD, "")):
        return await _problem(request, None, 403, "the form was not sent from this console "
                                                  "(CSRF check failed): reload and retry")
    token = form.get("token", "").strip()
    if not token or len(token) > session.TOKEN_MAX:
        return await _page(request, "login.html", None, status=400, next=target,
                           error="Enter a bearer token (at most 16 KiB).")
    gateway: Gateway | None = request.app.state.gateway
    if gateway is None:
        return await _problem(request, None, 503, "the console needs the host cluster "
                                                  "(serve --host-context)")
    try:
        request.state.caller = await run_in_threadpool(gateway.access.authenticate, token)
    except AccessError as exc:
        if exc.status != 401:
            return await _problem(request, None, exc.status, str(exc))
        return await _page(request, "login.html", None, status=401, next=target,
                           error="The host cluster did not accept this token.")
    response = RedirectResponse(target, 303, headers=HEADERS)
    session.log_in(request, response, token)
    return response


async def log_out(request: Request) -> Response:
    form = await _form(request)
    if not session.csrf_ok(request, form.get(session.CSRF_FIELD, "")):
        return await _problem(request, None, 403, "the form was not sent from this console "
                                                  "(CSRF check failed): reload and retry")
    response = RedirectResponse("/login", 303, headers=HEADERS)
    session.log_out(request, response)
    return response


# -- helpers ------------------------------------------------------------------------------
def _gateway(request: Request) -> Gateway:
    gateway: Gateway = request.app.state.gateway
    return gateway


async def _signed_in(request: Request) -> Caller | Response:
    """The caller of a page, or the answer instead: to the login form (no or a rejected
    token), 503 (no host cluster), 429 (over the rate limit)."""
    gateway: Gateway | None = request.app.state.gateway
    if gateway is None:
        return await _problem(request, None, 503, "the console needs the host cluster "
                                                  "(serve --host-context)")
    token = session.token_of(request)
    if token is None:
        return _to_login(request)
    try:
        caller = await run_in_threadpool(gateway.access.authenticate, token)
    except AccessError as exc:
        if exc.status != 401:
            return await _problem(request, None, exc.status, str(exc))
        response = _to_login(request)
        session.log_out(request, response)
        return response
    request.state.caller = caller
    wait = gateway.limits.retry_after(caller)
    if wait:
        response = await _problem(request, caller, 429, f"over the rate limit of "
                                                        f"{gateway.limits.qps:g} requests/s")
        response.headers["Retry-After"] = str(max(1, round(wait + 0.5)))
        return response
    return caller


def _to_login(request: Request) -> Response:
    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    target = "/login?" + urlencode({"next": here}) if here != "/" else "/login"
    if request.headers.get("hx-request") == "true":  # a refresh: htmx loads the login page
        return Response(status_code=401, headers={**HEADERS, "HX-Redirect": target})
    return RedirectResponse(target, 303, headers=HEADERS)


async def _form(request: Request) -> dict[str, str]:
    """A urlencoded form's first value per field (bounded: ``FORM_MAX`` bytes)."""
    if not request.headers.get("content-type", "").startswith(
            "application/x-www-form-urlencoded"):
        return {}
    body = (await request.body())[:FORM_MAX]
    fields = parse_qs(body.decode("utf-8", "replace"), max_num_fields=20)
    return {key: values[0] for key, values in fields.items() if values}


TITLES = {400: "Bad request", 401: "Not signed in", 403: "Forbidden", 404: "Not found",
          429: "Too many requests", 503: "Unavailable"}


async def _problem(request: Request, caller: Caller | None, status: int,
                   message: str) -> Response:
    return await _page(request, "problem.html", caller, status=status,
                       title=TITLES.get(status, "Error"), message=message)


async def _page(request: Request, template: str, caller: Caller | None, *, status: int = 200,
                **context: Any) -> Response:
    csrf = session.csrf_of(request)
    html = await run_in_threadpool(
        render, template, user=caller.user if caller else None, csrf=csrf, status=status,
        refresh=REFRESH_SECONDS, now=time.strftime("%H:%M:%S UTC", time.gmtime()), **context)
    response = HTMLResponse(html, status, headers=HEADERS)
    session.keep_csrf(request, response, csrf)
    return response
