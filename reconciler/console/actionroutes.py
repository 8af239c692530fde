"""The app page's actions: ``POST /apps/KIND/PROJECT/NAME/actions/ACTION`` (restart,
pause, resume, rerun). Each is a form with the page's CSRF value; the first POST answers
the confirmation page, whose form POSTs again with ``confirmed=yes`` and runs the action
as the API does (same verb, same code, same events), then redirects to the app page,
which shows its outcome with the API's status (202, or the 409 that says why not) for
``OUTCOME_SECONDS`` to whoever ran it. No JavaScript needed."""

from __future__ import annotations

import secrets
from urllib.parse import quote, urlencode

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from starlette.responses import RedirectResponse, Response

from reconciler.console import session
from reconciler.console.actions import ACTIONS, perform
from reconciler.console.respond import (
    HEADERS,
    form_of,
    gateway_of,
    problem_page,
    render_page,
    signed_in,
    sources_of,
)
from reconciler.status.document import APP_KINDS


def add_action_routes(app: FastAPI) -> None:
    app.add_api_route("/apps/{kind}/{project}/{name}/actions/{slug}", act, methods=["POST"],
                      include_in_schema=False)


async def act(request: Request, kind: str, project: str, name: str, slug: str) -> Response:
    who = await signed_in(request)
    if isinstance(who, Response):
        return who
    form = await form_of(request)
    if not session.csrf_ok(request, form.get(session.CSRF_FIELD, "")):
        return await problem_page(request, who, 403, "the form was not sent from this console "
                                                     "(CSRF check failed): reload and retry")
    action = ACTIONS.get(slug)
    if action is None or kind not in APP_KINDS:
        return await problem_page(request, who, 404, f"no action {slug!r} on {kind} apps")
    gateway = gateway_of(request)
    if not await run_in_threadpool(gateway.access.allowed, who, action.verb, kind, project):
        return await problem_page(request, who, 403, f"{who.user} may not {action.verb} "
                                                     f"{kind} in project {project}")
    key = (kind, project, name)
    if form.get("confirmed") != "yes":
        return await render_page(request, "confirm.html", who, key=key, action=action)
    outcome = await run_in_threadpool(perform, action, gateway, key, who.user)
    shown = secrets.token_urlsafe(16)
    sources_of(request).outcomes.put(shown, (who.user, key, outcome))
    # the app page shows it (POST, redirect, GET: a reload does not run the action again)
    return RedirectResponse(f"/apps/{quote(kind)}/{quote(project)}/{quote(name)}?"
                            + urlencode({"outcome": shown}), 303, headers=HEADERS)
