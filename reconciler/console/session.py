"""The console's session: the bearer token a user entered once stays in this process
(:class:`Sessions`); the browser holds only a random session id, in a cookie the page's
scripts cannot read (HttpOnly), sent to this site only (SameSite=Strict) and only over
https when the console is served over https (Secure). Logging out ends the session here,
so the id is worth nothing after it. And a CSRF token every POST form carries (double
submit: a random value in a cookie of its own, equal in the form).

Each request checks the session's token with the API's TokenReview path, so a revoked
token stops working within the access cache's ttl.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import urlsplit

from starlette.requests import HTTPConnection, Request
from starlette.responses import Response

from reconciler.api.access import TtlCache

SESSION_COOKIE = "pincompile_session"
CSRF_COOKIE = "pincompile_csrf"
CSRF_FIELD = "csrf"
TOKEN_MAX = 16 * 1024
"""Bytes of a bearer token accepted (Kubernetes service account tokens are ~1 KiB)."""
SESSION_SECONDS = 8 * 3600
SESSIONS_MAX = 10_000
"""Sessions one process keeps; the oldest goes first."""


class Sessions:
    """Console sessions held by this process: a random id (the cookie's value) → the bearer
    token it was opened with, for ``seconds`` at most; ids are kept by their SHA-256."""

    def __init__(self, seconds: float = SESSION_SECONDS, most: int = SESSIONS_MAX) -> None:
        self._tokens: TtlCache[str, str] = TtlCache(seconds, size=most)

    def start(self, token: str) -> str:
        """A new session for ``token``: its id."""
        session = secrets.token_urlsafe(32)
        self._tokens.put(_digest(session), token)
        return session

    def token(self, session: str) -> str | None:
        return self._tokens.get(_digest(session)) if session else None

    def end(self, session: str) -> None:
        self._tokens.pop(_digest(session))


def _digest(session: str) -> str:
    return hashlib.sha256(session.encode()).hexdigest()


def token_of(request: HTTPConnection, sessions: Sessions) -> str | None:
    """The token of the request's session (None: no session, or one that ended)."""
    session = request.cookies.get(SESSION_COOKIE, "")
    return sessions.token(session) if 20 <= len(session) <= 100 else None


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


def log_in(request: Request, response: Response, sessions: Sessions, token: str) -> None:
    response.set_cookie(SESSION_COOKIE, sessions.start(token), max_age=SESSION_SECONDS,
                        httponly=True, samesite="strict", secure=_secure(request), path="/")


def log_out(request: Request, response: Response, sessions: Sessions) -> None:
    """End the request's session here and delete its cookie."""
    sessions.end(request.cookies.get(SESSION_COOKIE, ""))
    response.delete_cookie(SESSION_COOKIE, httponly=True, samesite="strict",
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
