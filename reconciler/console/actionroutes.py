"""The console's actions: an app page's, ``POST /apps/KIND/PROJECT/NAME/actions/ACTION``
(restart, pause, resume, rerun), and a member cluster's on the overview,
``POST /clusters/NAME/rotation/ACTION`` (start, pause, resume). Each is a form with the
page's CSRF value; the first POST answers the confirmation page (a rotation's with its
batch and pause), whose form POSTs again with ``confirmed=yes`` and runs the action as
the API does (same verb, same code, same events), then redirects to the page it came
from, which shows its outcome with the API's status (202, or the 409 that says why not)
for ``OUTCOME_SECONDS`` to whoever ran it. No JavaScript needed."""

from __future__ import annotations

import secrets
from urllib.parse import quote, urlencode

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from starlette.responses import RedirectResponse, Response

from reconciler.api import rotations
from reconciler.api.access import Caller
from reconciler.api.insight import CLUSTER_KIND
from reconciler.console import session
from reconciler.console.actions import ACTIONS, Outcome, perform
from reconciler.console.respond import (
    HEADERS,
    Target,
    form_of,
    gateway_of,
    problem_page,
    render_page,
    signed_in,
    sources_of,
)
from reconciler.console.rotation import ROTATION_ACTIONS, perform_rotation, rotation_fields
from reconciler.status.document import APP_KINDS


def add_action_routes(app: FastAPI) -> None:
    app.add_api_route("/apps/{kind}/{project}/{name}/actions/{slug}", act, methods=["POST"],
                      include_in_schema=False)
    app.add_api_route("/clusters/{name}/rotation/{slug}", rotate, methods=["POST"],
                      include_in_schema=False)


async def posted(request: Request) -> tuple[Caller, dict[str, str]] | Response:
    """The caller of a POSTed form and its fields, or the answer instead: the login form,
    or a 403 page when the form's CSRF value is not this console's."""
    who = await signed_in(request)
    if isinstance(who, Response):
        return who
    form = await form_of(request)
    if not session.csrf_ok(request, form.get(session.CSRF_FIELD, "")):
        return await problem_page(request, who, 403, "the form was not sent from this console "
                                                     "(CSRF check failed): reload and retry")
    return who, form


def shown(request: Request, who: Caller, target: Target, outcome: Outcome,
          page: str) -> Response:
    """Keep ``outcome`` for ``page`` and redirect there (POST, redirect, GET: a reload does
    not run the action again)."""
    key = secrets.token_urlsafe(16)
    sources_of(request).outcomes.put(key, (who.user, target, outcome))
    return RedirectResponse(f"{page}?" + urlencode({"outcome": key}), 303, headers=HEADERS)


async def act(request: Request, kind: str, project: str, name: str, slug: str) -> Response:
    checked = await posted(request)
    if isinstance(checked, Response):
        return checked
    who, form = checked
    action = ACTIONS.get(slug)
    if action is None or kind not in APP_KINDS:
        return await problem_page(request, who, 404, f"no action {slug!r} on {kind} apps")
    gateway = gateway_of(request)
    if not await run_in_threadpool(gateway.access.allowed, who, action.verb, kind, project):
        return await problem_page(request, who, 403, f"{who.user} may not {action.verb} "
                                                     f"{kind} in project {project}")
    key = (kind, project, name)
    here = f"/apps/{quote(kind)}/{quote(project)}/{quote(name)}"
    if form.get("confirmed") != "yes":
        return await render_page(request, "confirm.html", who, action=action, kind=kind,
                                 subject=f"{project}/{name}", back=here,
                                 target=f"{here}/actions/{quote(slug)}", fields=[])
    outcome = await run_in_threadpool(perform, action, gateway, key, who.user)
    return shown(request, who, key, outcome, here)


async def rotate(request: Request, name: str, slug: str) -> Response:
    checked = await posted(request)
    if isinstance(checked, Response):
        return checked
    who, form = checked
    action = ROTATION_ACTIONS.get(slug)
    if action is None:
        return await problem_page(request, who, 404, f"no rotation action {slug!r}")
    gateway = gateway_of(request)
    if not await rotations.may(gateway.access, who, "rotate", name):
        return await problem_page(request, who, 403, f"{who.user} may not rotate cluster "
                                                     f"{name[:rotations.MAX_NAME]}")
    if form.get("confirmed") != "yes":
        source = sources_of(request).members
        members = await run_in_threadpool(source.health) if source is not None else []
        member = next((m for m in members if m.name == name), None)
        return await render_page(request, "confirm.html", who, action=action,
                                 kind=CLUSTER_KIND, subject=name, back="/",
                                 target=f"/clusters/{quote(name, safe='')}/rotation/"
                                        f"{quote(slug)}",
                                 fields=rotation_fields(action, member))
    outcome = await run_in_threadpool(perform_rotation, action, gateway.host, name,
                                      who.user, form)
    return shown(request, who, (CLUSTER_KIND, name), outcome, "/")
