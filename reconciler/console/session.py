"""The console's session: the bearer token a user entered once, kept in a cookie the
page's scripts cannot read (HttpOnly), sent to this site only (SameSite=Strict) and only
over https when the console is served over https (Secure); and a CSRF token every POST
form carries (double submit: a random value in a cookie of its own, equal in the form).

The token cookie holds the token itself, as an ``Authorization: Bearer`` header would:
each request checks it with the API's TokenReview path, so every ``serve`` replica
accepts it and a revoked token stops working within the access cache's ttl.
"""

from __future__ import annotations

import hmac
import secrets
from urllib.parse import urlsplit

from starlette.requests import HTTPConnection, Request
from starlette.responses import Response

TOKEN_COOKIE = "pincompile_token"
CSRF_COOKIE = "pincompile_csrf"
CSRF_FIELD = "csrf"
TOKEN_MAX = 16 * 1024
"""Bytes of a bearer token accepted (Kubernetes service account tokens are ~1 KiB)."""
SESSION_SECONDS = 8 * 3600


def token_of(request: HTTPConnection) -> str | None:
    token = request.cookies.get(TOKEN_COOKIE, "").strip()
    return token if token and len(token) <= TOKEN_MAX else None


def csrf_of(request: Request) -> str:
    """The request's CSRF value: its cookie's, or a new one (set it with :func:`keep_csrf`)."""
    value = request.cookies.get(CSRF_COOKIE, "")
    return value if 20 <= len(value) <= 100 else secrets.token_urlsafe(32)


def _secure(request: Request) -> bool:
    return request.url.scheme == "https"


def keep_csrf(request: Request, response: Response, value: str) -> None:
    if request.cookies.get(CSRF_COOKIE) != value:
        response.set_cookie(CSRF_COOKIE, value, httponly=True, samesite="strict",
                            secure=_secure(request), path="/")


def log_in(request: Request, response: Response, token: str) -> None:
    response.set_cookie(TOKEN_COOKIE, token, max_age=SESSION_SECONDS, httponly=True,
                        samesite="strict", secure=_secure(request), path="/")


def log_out(request: Request, response: Response) -> None:
    response.delete_cookie(TOKEN_COOKIE, httponly=True, samesite="strict",
                           secure=_secure(request), path="/")


def csrf_ok(request: HTTPConnection, submitted: str) -> bool:
    """A POST (or the terminal's WebSocket) is ours: its CSRF value equals its cookie's, and
    a browser that names the page it came from (``Origin``) names this site."""
    cookie = request.cookies.get(CSRF_COOKIE, "")
    origin = request.headers.get("origin")
    if origin is not None and origin != "null" and not same_origin(request, origin):
        return False
    return bool(cookie) and hmac.compare_digest(cookie.encode(), submitted.encode())


def same_origin(request: HTTPConnection, origin: str) -> bool:
    """``origin`` is this site's (a WebSocket's ``ws``/``wss`` is ``http``/``https``)."""
    scheme = {"ws": "http", "wss": "https"}.get(request.url.scheme, request.url.scheme)
    parts = urlsplit(origin)
    return (parts.scheme, parts.netloc) == (scheme, request.url.netloc)


def local_path(target: str) -> str:
    """Where to go after logging in: a path on this site, never another site's URL."""
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("//") \
            or "\\" in target:
        return "/"
    return target
