"""The app page's terminal: ``/apps/KIND/PROJECT/NAME/terminal?cluster=&pod=&csrf=`` is a
WebSocket running a shell (``tty``, stdin) in the pod's first container, through the
API's own exec session code (:func:`reconciler.api.app.serve_exec`): the same verb
(``create <kind>s/exec``), limits and audit line, the same frames
(reconciler/api/exec_protocol.py).

A browser cannot send a bearer header on a WebSocket, so the handshake carries the
console's cookie session; since any site may open a WebSocket to this one (cookies
included), the handshake must also name this site as its ``Origin`` and carry the page's
CSRF value.
"""

from __future__ import annotations

from fastapi import FastAPI, WebSocket

from reconciler.api.access import AccessError, Caller
from reconciler.api.app import Gateway, caller_with_token, serve_exec
from reconciler.api.exec_protocol import ExecQuery
from reconciler.console import session
from reconciler.console.respond import sources_of

SHELL = ("sh", "-c", "command -v bash >/dev/null 2>&1 && exec bash; exec sh")
"""What the terminal runs: bash where the image has it, sh otherwise."""


def add_terminal_route(app: FastAPI) -> None:
    app.add_api_websocket_route("/apps/{kind}/{project}/{name}/terminal", terminal)


async def terminal(websocket: WebSocket, kind: str, project: str, name: str,
                   cluster: str | None = None, pod: str | None = None,
                   container: str | None = None, csrf: str = "") -> None:
    async def authenticate(connection: WebSocket) -> Caller:
        return await console_caller(connection, csrf)

    query = ExecQuery(SHELL, container, cluster, pod, stdin=True, tty=True)
    await serve_exec(websocket, (kind, project, name), query, authenticate)


async def console_caller(websocket: WebSocket, csrf: str) -> Caller:
    """The signed-in caller of a terminal's handshake (AccessError: 403 from another site
    or without the page's CSRF value, 401 not signed in, 503 no host cluster)."""
    origin = websocket.headers.get("origin")
    if origin is None or not session.same_origin(websocket, origin):
        raise AccessError(403, "the terminal opens only from this console's pages (the "
                               "handshake's Origin is not this site)")
    if not session.csrf_ok(websocket, csrf):
        raise AccessError(403, "the terminal was not opened from this console (CSRF check "
                               "failed): reload the page")
    gateway: Gateway | None = websocket.app.state.gateway
    if gateway is None:
        raise AccessError(503, "the console needs the host cluster (serve --host-context)")
    token = session.token_of(websocket, sources_of(websocket).sessions)
    if token is None:
        raise AccessError(401, "not signed in: log in to the console again")
    return await caller_with_token(websocket, gateway, token)
