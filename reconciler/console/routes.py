"""The console's pages on the API's ASGI app (``mount_console``): log in and out (wrong
tokens throttled per client address), the overview at ``/`` (member clusters and the
grid), one app at ``/apps/KIND/PROJECT/NAME`` (its pods, logs panel, scaling chart and
history with commit links; its log routes in :mod:`reconciler.console.logroutes`) and the
vendored assets at ``/static/``. Who may see what is the API's own decision
(``Gateway.access``: TokenReview, then SubjectAccessReview per kind and project), and
every page is audited like an API call. With JavaScript on, htmx refreshes the grid and
the app's status every few seconds.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from starlette.responses import RedirectResponse, Response
from starlette.staticfiles import StaticFiles

from reconciler.api.access import AccessError, Audited
from reconciler.api.app import Gateway
from reconciler.console import session
from reconciler.console.chart import HOURS, scaling_chart
from reconciler.console.links import commit_url
from reconciler.console.logroutes import add_log_routes, may_read_logs
from reconciler.console.logs import LogFilter
from reconciler.console.members import MemberSource
from reconciler.console.pods import read_pods
from reconciler.console.respond import (
    HEADERS,
    Sources,
    gateway_of,
    problem_page,
    render_page,
    signed_in,
    sources_of,
)
from reconciler.console.views import PAGE_SIZES, Filters, app_page, grid
from reconciler.status_document import APP_KINDS

EVENTS_SHOWN = 200
REVISIONS_SHOWN = 50
FORM_MAX = 32 * 1024
"""Bytes of a POSTed form read (a token is at most session.TOKEN_MAX)."""
CONSOLE_PATHS = ("/", "/login", "/logout", "/apps/")


def mount_console(app: FastAPI, *, members: MemberSource | None = None,
                  repo: str = "") -> None:
    """Add the console to the API's app (``create_app``); it reads ``app.state.gateway``,
    the member clusters' health from ``members`` and links commits of ``repo``."""
    app.state.console = Sources(members=members, repo=repo)
    app.mount("/static", StaticFiles(packages=[("reconciler.console", "static")]),
              name="console-static")

    app.add_middleware(Audited, audited=lambda path: path == "/"
                       or path.startswith(CONSOLE_PATHS[1:]))

    app.add_api_route("/", overview, methods=["GET"], include_in_schema=False)
    app.add_api_route("/apps/{kind}/{project}/{name}", app_view, methods=["GET"],
                      include_in_schema=False)
    add_log_routes(app)
    app.add_api_route("/login", login_form, methods=["GET"], include_in_schema=False)
    app.add_api_route("/login", log_in, methods=["POST"], include_in_schema=False)
    app.add_api_route("/logout", log_out, methods=["POST"], include_in_schema=False)


async def overview(request: Request) -> Response:
    who = await signed_in(request)
    if isinstance(who, Response):
        return who
    gateway = gateway_of(request)
    filters = Filters.parse(request.query_params)

    def may_list(kind: str, project: str) -> bool:
        return gateway.access.allowed(who, "list", kind, project)

    page = await run_in_threadpool(grid, gateway.apps.statuses(), filters, may_list)
    source = sources_of(request).members
    members = await run_in_threadpool(source.health) if source is not None else None
    partial = request.headers.get("hx-request") == "true"
    return await render_page(request, "grid.html" if partial else "overview.html", who,
                             grid=page, sizes=PAGE_SIZES, members=members)


async def app_view(request: Request, kind: str, project: str, name: str) -> Response:
    who = await signed_in(request)
    if isinstance(who, Response):
        return who
    gateway = gateway_of(request)
    if kind not in APP_KINDS:
        return await problem_page(request, who, 404, f"no app kind {kind!r}; one of "
                                                     f"{', '.join(sorted(APP_KINDS))}")
    if not await run_in_threadpool(gateway.access.allowed, who, "read", kind, project):
        return await problem_page(request, who, 403, f"{who.user} may not read {kind} apps "
                                                     f"in project {project}")
    key = (kind, project, name)
    status = gateway.apps.statuses().get(key)
    if status is None:
        return await problem_page(request, who, 404, f"{kind}/{project}/{name} not found")
    events = await run_in_threadpool(gateway.store.events, key, limit=EVENTS_SHOWN)
    history = await run_in_threadpool(gateway.store.history, key, limit=REVISIONS_SHOWN)
    page = app_page(key, status, events, history)
    page.pods = await run_in_threadpool(read_pods, gateway, key)
    chart = None
    if kind == "PinScaler":
        now = datetime.now(UTC)
        samples = await run_in_threadpool(gateway.store.samples, key,
                                          since=now - timedelta(hours=HOURS))
        chart = scaling_chart(samples, now)
    repo = sources_of(request).repo
    links = {r.commit: commit_url(repo, r.commit) for r in history if r.commit}
    return await render_page(request, "app.html", who, page=page, log_filter=LogFilter(),
                             commit_links=links, chart=chart, hours=HOURS,
                             may_logs=await may_read_logs(request, who, kind, project))


async def login_form(request: Request) -> Response:
    target = session.local_path(request.query_params.get("next", "/"))
    return await render_page(request, "login.html", None, next=target, error="")


async def log_in(request: Request) -> Response:
    form = await _form(request)
    target = session.local_path(form.get("next", "/"))
    if not session.csrf_ok(request, form.get(session.CSRF_FIELD, "")):
        return await problem_page(request, None, 403, "the form was not sent from this console "
                                                      "(CSRF check failed): reload and retry")
    logins, client = sources_of(request).logins, request.client.host if request.client else ""
    wait = logins.retry_after(client)
    if wait:
        response = await problem_page(request, None, 429, "too many wrong tokens from this "
                                                          "address: wait and retry")
        response.headers["Retry-After"] = str(max(1, round(wait + 0.5)))
        return response
    token = form.get("token", "").strip()
    if not token or len(token) > session.TOKEN_MAX:
        return await render_page(request, "login.html", None, status=400, next=target,
                                 error="Enter a bearer token (at most 16 KiB).")
    gateway: Gateway | None = request.app.state.gateway
    if gateway is None:
        return await problem_page(request, None, 503, "the console needs the host cluster "
                                                      "(serve --host-context)")
    try:
        request.state.caller = await run_in_threadpool(gateway.access.authenticate, token)
    except AccessError as exc:
        if exc.status != 401:
            return await problem_page(request, None, exc.status, str(exc))
        logins.failed(client)
        return await render_page(request, "login.html", None, status=401, next=target,
                                 error="The host cluster did not accept this token.")
    response = RedirectResponse(target, 303, headers=HEADERS)
    session.log_in(request, response, token)
    return response


async def log_out(request: Request) -> Response:
    form = await _form(request)
    if not session.csrf_ok(request, form.get(session.CSRF_FIELD, "")):
        return await problem_page(request, None, 403, "the form was not sent from this console "
                                                      "(CSRF check failed): reload and retry")
    response = RedirectResponse("/login", 303, headers=HEADERS)
    session.log_out(request, response)
    return response


# -- helpers ------------------------------------------------------------------------------
async def _form(request: Request) -> dict[str, str]:
    """A urlencoded form's first value per field (bounded: ``FORM_MAX`` bytes)."""
    if not request.headers.get("content-type", "").startswith(
            "application/x-www-form-urlencoded"):
        return {}
    body = (await request.body())[:FORM_MAX]
    fields = parse_qs(body.decode("utf-8", "replace"), max_num_fields=20)
    return {key: values[0] for key, values in fields.items() if values}
