"""The console's pages on the API's ASGI app (``mount_console``): log in and out (wrong
tokens throttled per client address), the overview at ``/`` (member clusters and the
grid), one project's cost and forecast at ``/projects/PROJECT``
(:mod:`reconciler.console.projectpage`), one app at ``/apps/KIND/PROJECT/NAME``
(:mod:`reconciler.console.apppage`; its log routes in :mod:`~reconciler.console.logroutes`,
its actions in :mod:`~reconciler.console.actionroutes`, its pods' terminal in
:mod:`~reconciler.console.terminal`), a member cluster's rotation actions at
``/clusters/NAME/rotation/`` (:mod:`~reconciler.console.actionroutes`) and the vendored
assets at ``/static/``. Who may see what is the API's own decision (``Gateway.access``:
TokenReview, then SubjectAccessReview per kind and project), and every page is audited
like an API call.
With JavaScript on, htmx refreshes the grid and the app's status every few seconds.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from starlette.responses import RedirectResponse, Response
from starlette.staticfiles import StaticFiles

from reconciler.api import rotations
from reconciler.api.access import AccessError, Audited, allowed
from reconciler.api.app import Gateway, token_caller
from reconciler.api.insight import CLUSTER_KIND
from reconciler.console import session
from reconciler.console.actionroutes import add_action_routes
from reconciler.console.apppage import app_response
from reconciler.console.logroutes import add_log_routes
from reconciler.console.members import MemberSource
from reconciler.console.projectpage import project_view
from reconciler.console.respond import (
    HEADERS,
    Sources,
    form_of,
    gateway_of,
    outcome_of,
    problem_page,
    render_page,
    signed_in,
    sources_of,
)
from reconciler.console.rotation import RotationAction, offered_rotation
from reconciler.console.terminal import add_terminal_route
from reconciler.console.views import PAGE_SIZES, Filters, grid

CONSOLE_PATHS = ("/", "/login", "/logout", "/apps/", "/projects/", "/clusters/")


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
    app.add_api_route("/projects/{project}", project_view, methods=["GET"],
                      include_in_schema=False)
    add_log_routes(app)
    add_action_routes(app)
    add_terminal_route(app)
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
    members = capacity = outcome = None
    rotation_actions: dict[str, list[RotationAction]] = {}
    if source is not None and page.visible:  # only clusters the caller's apps are in
        placed = set(page.options["cluster"])
        members = [m for m in await run_in_threadpool(source.health) if m.name in placed]
        if gateway.insight is not None and await allowed(gateway.access, who, "list",
                                                         CLUSTER_KIND, ""):
            capacity = await run_in_threadpool(sources_of(request).capacity.panel,
                                               gateway.insight)
        rotation_actions = {m.name: offered_rotation(m) for m in members
                            if await rotations.may(gateway.access, who, "rotate", m.name)}
        outcome = next(filter(None, (outcome_of(request, who, (CLUSTER_KIND, m.name))
                                     for m in members)), None)
    partial = request.headers.get("hx-request") == "true"
    return await render_page(request, "grid.html" if partial else "overview.html", who,
                             grid=page, sizes=PAGE_SIZES, members=members, capacity=capacity,
                             rotation_actions=rotation_actions, outcome=outcome)


async def app_view(request: Request, kind: str, project: str, name: str) -> Response:
    who = await signed_in(request)
    if isinstance(who, Response):
        return who
    return await app_response(request, who, (kind, project, name))


async def login_form(request: Request) -> Response:
    target = session.local_path(request.query_params.get("next", "/"))
    return await render_page(request, "login.html", None, next=target, error="")


async def log_in(request: Request) -> Response:
    form = await form_of(request)
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
        request.state.caller = await token_caller(request, gateway, token)
    except AccessError as exc:
        if exc.status != 401:
            response = await problem_page(request, None, exc.status, str(exc))
            response.headers.update(exc.headers)
            return response
        logins.failed(client)
        return await render_page(request, "login.html", None, status=401, next=target,
                                 error="The host cluster did not accept this token.")
    response = RedirectResponse(target, 303, headers=HEADERS)
    session.log_in(request, response, sources_of(request).sessions, token)
    return response


async def log_out(request: Request) -> Response:
    form = await form_of(request)
    if not session.csrf_ok(request, form.get(session.CSRF_FIELD, "")):
        return await problem_page(request, None, 403, "the form was not sent from this console "
                                                      "(CSRF check failed): reload and retry")
    response = RedirectResponse("/login", 303, headers=HEADERS)
    session.log_out(request, response, sources_of(request).sessions)
    return response
