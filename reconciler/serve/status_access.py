"""Who may read ``/status`` and ``/metrics``: they tell what runs where in every project,
so by default only a caller the host cluster authorizes (a bearer token its TokenReview
accepts, whose user may ``get`` the path as a non-resource URL), or one holding the
status token (``--status-token-file``); anyone only with ``--open-status``."""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from fastapi import Request, Response
from fastapi.concurrency import run_in_threadpool

from reconciler.api.access import AccessError, PathAccess
from reconciler.api.app import Gateway, token_caller

_TEXT = "text/plain; charset=utf-8"


@dataclass(frozen=True)
class StatusAccess:
    """``open``: anyone may read; ``token``: the status token, compared in constant time."""

    open: bool = False
    token: bytes | None = None


async def status_refusal(request: Request, access: StatusAccess,
                         gateway: Gateway | None) -> Response | None:
    """None when the request may read its path, else the answer: 401 (no token, or one
    neither the status token nor accepted by the host), 403 (the host's RBAC does not
    let its user ``get`` the path), 429 or 503 (the host's review)."""
    if access.open:
        return None
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return _refused(401, "send Authorization: Bearer TOKEN (a token the host cluster "
                             "authorizes for this path, or the status token)")
    if access.token is not None and hmac.compare_digest(
            token.encode("utf-8", "replace"), access.token):
        return None
    if gateway is None or not isinstance(gateway.access, PathAccess):
        return _refused(401, "the bearer token is not the status token")
    try:
        caller = await token_caller(request, gateway, token)
        allowed = await run_in_threadpool(gateway.access.may_get, caller, request.url.path)
    except AccessError as exc:
        return _refused(exc.status, str(exc), exc.headers)
    if not allowed:
        return _refused(403, f"{caller.user} may not get {request.url.path} (a ClusterRole "
                             "rule with nonResourceURLs grants it)")
    return None


def _refused(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return Response(message + "\n", status, headers=headers or None, media_type=_TEXT)
