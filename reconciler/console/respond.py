"""How the console answers: a page rendered with the session's CSRF value and the
console's security headers, a problem page, the signed-in caller of a request (or the
answer instead: the login form, 503, 429)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode

from fastapi import Request
from fastapi.concurrency import run_in_threadpool
from starlette.requests import HTTPConnection
from starlette.responses import HTMLResponse, RedirectResponse, Response

from reconciler.api.access import AccessError, Caller, TtlCache
from reconciler.api.app import Gateway, token_caller
from reconciler.console import session
from reconciler.console.actions import Outcome
from reconciler.console.capacity import CapacitySnapshots
from reconciler.console.members import MemberSource
from reconciler.console.render import render
from reconciler.console.throttle import LoginThrottle

REFRESH_SECONDS = 5
OUTCOME_SECONDS = 600
"""How long the page an action redirects to shows its outcome."""
Target = tuple[str, ...]
"""What an action ran on: an app's key, or (``Cluster``, NAME) for a member cluster's."""
Shown = tuple[str, Target, Outcome]
"""An action's outcome as kept for its page: who ran it, on what, what it answered."""
FORM_MAX = 32 * 1024
"""Bytes of a POSTed form read (a token is at most session.TOKEN_MAX)."""
FORM_FIELDS = 20
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
                               "frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
TERMINAL_HEADERS = {**HEADERS, "Content-Security-Policy": HEADERS["Content-Security-Policy"]
                    + "; style-src 'self' 'unsafe-inline'"}
"""An app page with a terminal: xterm.js sizes and colours its screen with ``<style>``
elements it writes, so styles (never scripts) may be inline there."""


@dataclass(frozen=True)
class Sources:
    """What the console reads beside the API's gateway (``serve`` passes them to
    ``mount_console``): the member clusters' health, the repository's URL, the login
    throttle, and what pages share."""

    members: MemberSource | None = None
    repo: str = ""
    logins: LoginThrottle = field(default_factory=LoginThrottle)
    """Wrong tokens tried per client address."""
    sessions: session.Sessions = field(default_factory=session.Sessions)
    """The sessions logged in on this process."""
    outcomes: TtlCache[str, Shown] = field(
        default_factory=lambda: TtlCache(OUTCOME_SECONDS, size=1000))
    """Actions' outcomes, for the page an action redirects to (``?outcome=ID``)."""
    capacity: CapacitySnapshots = field(default_factory=CapacitySnapshots)
    """The member clusters' live capacity, one snapshot for every page."""


def sources_of(request: HTTPConnection) -> Sources:
    sources: Sources = getattr(request.app.state, "console", None) or Sources()
    return sources


def outcome_of(request: Request, who: Caller, target: Target) -> Outcome | None:
    """The outcome of the action that redirected here (``?outcome=ID``), if ``who`` ran
    it on ``target``."""
    shown = sources_of(request).outcomes.get(request.query_params.get("outcome", ""))
    return shown[2] if shown is not None and shown[:2] == (who.user, target) else None


def gateway_of(request: Request) -> Gateway:
    gateway: Gateway = request.app.state.gateway
    return gateway


async def signed_in(request: Request) -> Caller | Response:
    """The caller of a page, or the answer instead: to the login form (no or a rejected
    token), 503 (no host cluster), 429 (over the rate limit)."""
    gateway: Gateway | None = request.app.state.gateway
    if gateway is None:
        return await problem_page(request, None, 503, "the console needs the host cluster "
                                                      "(serve --host-context)")
    sessions = sources_of(request).sessions
    token = session.token_of(request, sessions)
    if token is None:
        return to_login(request)
    try:
        caller = await token_caller(request, gateway, token)
    except AccessError as exc:
        if exc.status != 401:
            response = await problem_page(request, None, exc.status, str(exc))
            response.headers.update(exc.headers)
            return response
        response = to_login(request)
        session.log_out(request, response, sessions)
        return response
    request.state.caller = caller
    wait = gateway.limits.retry_after(caller)
    if wait:
        response = await problem_page(request, caller, 429, f"over the rate limit of "
                                                            f"{gateway.limits.qps:g} requests/s")
        response.headers["Retry-After"] = str(max(1, round(wait + 0.5)))
        return response
    return caller


def to_login(request: Request) -> Response:
    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    target = "/login?" + urlencode({"next": here}) if here != "/" else "/login"
    if request.headers.get("hx-request") == "true":  # a refresh: htmx loads the login page
        return Response(status_code=401, headers={**HEADERS, "HX-Redirect": target})
    return RedirectResponse(target, 303, headers=HEADERS)


TITLES = {400: "Bad request", 401: "Not signed in", 403: "Forbidden", 404: "Not found",
          429: "Too many requests", 503: "Unavailable"}


async def problem_page(request: Request, caller: Caller | None, status: int,
                       message: str) -> Response:
    return await render_page(request, "problem.html", caller, status=status,
                       title=TITLES.get(status, "Error"), message=message)


async def render_page(request: Request, template: str, caller: Caller | None, *, status: int = 200,
                      headers: dict[str, str] = HEADERS, **context: Any) -> Response:
    csrf = session.csrf_of(request)
    html = await run_in_threadpool(
        render, template, user=caller.user if caller else None, csrf=csrf, status=status,
        refresh=REFRESH_SECONDS, now=time.strftime("%H:%M:%S UTC", time.gmtime()), **context)
    response = HTMLResponse(html, status, headers=headers)
    session.keep_csrf(request, response, csrf)
    return response


async def form_of(request: Request) -> dict[str, str]:
    """A urlencoded form's first value per field; empty for another content type or a form
    of more than ``FORM_FIELDS`` fields (at most ``FORM_MAX`` bytes are read)."""
    if not request.headers.get("content-type", "").startswith(
            "application/x-www-form-urlencoded"):
        return {}
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) >= FORM_MAX:
            break
    try:
        fields = parse_qs(body[:FORM_MAX].decode("utf-8", "replace"),
                          max_num_fields=FORM_FIELDS)
    except ValueError:  # more fields than any console form has
        return {}
    return {key: values[0] for key, values in fields.items() if values}
