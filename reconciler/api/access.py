"""Who is calling and what they may do: bearer tokens checked with a TokenReview on the
host cluster, each call authorized with a SubjectAccessReview against the app's resource
there (so the host's RBAC is the one policy), a rate limit per user, an audit line per call.

Decisions are cached like the API server's webhook authorizer does: an allow for ``ttl``
seconds (so a revoked grant stops within that), a denial for ``denied_ttl`` (a tenant's
overview asks about every project's apps, and most answers are no; a new grant waits
that long at most),
in bounded caches; a token is cached by its SHA-256, never kept in clear. A cached answer
is given in the event loop (:func:`authenticate`, :func:`allowed`); only a review goes to
a worker thread, and a client address may have only so many tokens the cache does not
know reviewed (``reviews``): a flood of made-up tokens gets 429s, not TokenReviews.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, Generic, Protocol, TypeVar, cast, runtime_checkable

from kubernetes.dynamic.exceptions import DynamicApiError
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from reconciler.clients.access import ClusterAccess
from reconciler.clients.connect import ClusterUnreachable, TokenBucket

audit_log = logging.getLogger("pincompile.api.audit")

ACTIONS: dict[str, tuple[str, str]] = {
    "list": ("list", ""),
    "read": ("get", ""),
    "logs": ("get", "logs"),
    "exec": ("create", "exec"),
    "restart": ("update", "restart"),
    "rollout": ("update", "rollout"),
    "rerun": ("update", "rerun"),
    "restart-container": ("update", "restart-container"),
    "rotate": ("update", "rotation"),
}
"""What a call does → (RBAC verb, subresource) on the app's kind in its project."""


@dataclass(frozen=True)
class Caller:
    user: str
    groups: tuple[str, ...] = ()


class AccessError(Exception):
    """The call is refused: ``status`` 401 (who?), 403 (not allowed), 429 (too many
    unknown tokens from the client's address: ``retry_after`` seconds) or 503 (host down)."""

    def __init__(self, status: int, message: str, retry_after: float = 0.0) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after

    @property
    def headers(self) -> dict[str, str]:
        """The answer's headers: what to send (401) or how long to wait (429)."""
        if self.status == 401:
            return {"WWW-Authenticate": "Bearer"}
        if self.status == 429:
            return {"Retry-After": str(max(1, round(self.retry_after + 0.5)))}
        return {}


class Access(Protocol):
    def authenticate(self, token: str) -> Caller: ...

    def allowed(self, caller: Caller, action: str, kind: str, project: str) -> bool: ...


@runtime_checkable
class Remembering(Protocol):
    """An :class:`Access` that may know an answer without asking anyone (a cache)."""

    def known_caller(self, token: str) -> Caller | None:
        """The caller of ``token`` if known now, else None (ask :meth:`authenticate`);
        AccessError 401 when ``token`` is known to be refused."""

    def known_decision(self, caller: Caller, action: str, kind: str, project: str
                       ) -> bool | None:
        """The decision if known now, else None (ask :meth:`allowed`)."""


@runtime_checkable
class PathAccess(Protocol):
    """An :class:`Access` that can say whether a caller may ``GET`` a path of serve's own
    (``/status``, ``/metrics``: a non-resource URL in the host's RBAC)."""

    def may_get(self, caller: Caller, path: str) -> bool: ...


@cache
def _remembers(kind: type) -> bool:
    return issubclass(kind, Remembering)  # once per class: a protocol check is slow


async def authenticate(access: Access, token: str, *, client: str = "",
                       reviews: RateLimits | None = None) -> Caller:
    """``access.authenticate(token)``: at once when the answer is known, else in a worker
    thread (a TokenReview is a request to the host) when ``client`` (its address) is
    within ``reviews``; AccessError 429 otherwise."""
    if _remembers(type(access)):
        known = cast(Remembering, access).known_caller(token)
        if known is not None:
            return known
    if reviews is not None:
        wait = reviews.retry_after_key(client)
        if wait:
            raise AccessError(429, f"too many unknown bearer tokens from {client or 'one'} "
                                   f"address (at most {reviews.qps:g} a second)",
                              retry_after=wait)
    return await run_in_threadpool(access.authenticate, token)


async def allowed(access: Access, caller: Caller, action: str, kind: str, project: str
                  ) -> bool:
    """``access.allowed(...)``: at once when the decision is known, else in a worker thread
    (a SubjectAccessReview is a request to the host)."""
    if _remembers(type(access)):
        known = cast(Remembering, access).known_decision(caller, action, kind, project)
        if known is not None:
            return known
    return await run_in_threadpool(access.allowed, caller, action, kind, project)


K = TypeVar("K")
V = TypeVar("V")


class TtlCache(Generic[K, V]):
    """At most ``size`` entries, each kept ``ttl`` seconds; the oldest goes first."""

    def __init__(self, ttl: float, size: int = 10_000) -> None:
        self.ttl, self.size = ttl, size
        self._items: OrderedDict[K, tuple[float, V]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            item = self._items.get(key)
            if item is None or item[0] < time.monotonic():
                return None
            return item[1]

    def known(self, key: K) -> bool:
        """Whether ``key`` is held and fresh (its value may be None)."""
        with self._lock:
            item = self._items.get(key)
            return item is not None and item[0] >= time.monotonic()

    def pop(self, key: K) -> None:
        with self._lock:
            self._items.pop(key, None)

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._items[key] = (time.monotonic() + self.ttl, value)
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)


Decision = tuple[Caller, str, str, str]
"""Who, verb or action, kind (empty for a path), project or path."""


class Decisions:
    """Access decisions: allows kept ``ttl`` seconds, denials ``denied_ttl``."""

    def __init__(self, ttl: float, denied_ttl: float) -> None:
        self._allowed: TtlCache[Decision, bool] = TtlCache(ttl)
        self._denied: TtlCache[Decision, bool] = TtlCache(denied_ttl)

    def get(self, key: Decision) -> bool | None:
        if self._allowed.get(key):
            return True
        return False if self._denied.get(key) is not None else None

    def put(self, key: Decision, allowed: bool) -> None:
        (self._allowed if allowed else self._denied).put(key, allowed)


class HostAccess:
    """TokenReview and SubjectAccessReview on the host cluster."""

    def __init__(self, host: ClusterAccess, *, ttl: float = 10.0, denied_ttl: float = 60.0
                 ) -> None:
        self.host = host
        self._callers: TtlCache[str, Caller | None] = TtlCache(ttl)
        self._decisions = Decisions(ttl, denied_ttl)

    def known_caller(self, token: str) -> Caller | None:
        digest = _digest(token)
        caller = self._callers.get(digest)
        if caller is None and self._callers.known(digest):
            raise AccessError(401, "the bearer token was not accepted by the host cluster")
        return caller

    def known_decision(self, caller: Caller, action: str, kind: str, project: str
                       ) -> bool | None:
        return self._decisions.get((caller, action, kind, project))

    def authenticate(self, token: str) -> Caller:
        digest = _digest(token)
        caller = self._callers.get(digest)
        if caller is None:
            review = self._create("authentication.k8s.io/v1", "TokenReview",
                                  {"spec": {"token": token}})
            status = review.get("status") or {}
            user = status.get("user") or {}
            caller = Caller(user["username"], tuple(user.get("groups") or ())) \
                if status.get("authenticated") and user.get("username") else None
            self._callers.put(digest, caller)
        if caller is None:
            raise AccessError(401, "the bearer token was not accepted by the host cluster")
        return caller

    def allowed(self, caller: Caller, action: str, kind: str, project: str) -> bool:
        key = (caller, action, kind, project)
        decision = self._decisions.get(key)
        if decision is None:
            verb, subresource = ACTIONS[action]
            review = self._create("authorization.k8s.io/v1", "SubjectAccessReview", {"spec": {
                "user": caller.user, "groups": list(caller.groups),
                "resourceAttributes": {"group": "pincompute.io", "resource": plural(kind),
                                       "subresource": subresource, "verb": verb,
                                       "namespace": project}}})
            decision = bool((review.get("status") or {}).get("allowed"))
            self._decisions.put(key, decision)
        return decision

    def may_get(self, caller: Caller, path: str) -> bool:
        """``get`` on the non-resource URL ``path`` (``nonResourceURLs`` in a ClusterRole)."""
        return self.may(caller, "get", path)

    def may(self, caller: Caller, verb: str, path: str) -> bool:
        """``verb`` (get, post) on the non-resource URL ``path``."""
        key = (caller, verb, "", path)
        decision = self._decisions.get(key)
        if decision is None:
            review = self._create("authorization.k8s.io/v1", "SubjectAccessReview", {"spec": {
                "user": caller.user, "groups": list(caller.groups),
                "nonResourceAttributes": {"path": path, "verb": verb}}})
            decision = bool((review.get("status") or {}).get("allowed"))
            self._decisions.put(key, decision)
        return decision

    def _create(self, api_version: str, kind: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            created = self.host.create({"apiVersion": api_version, "kind": kind, **body})
        except ClusterUnreachable as exc:
            raise AccessError(503, f"the host cluster cannot check access: {exc}") from None
        except DynamicApiError as exc:
            raise AccessError(503, f"the host cluster refused the {kind}: "
                                   f"{exc.summary()}") from None
        return created


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def plural(kind: str) -> str:
    """The resource name of an app kind on the host (``PinApp`` → ``pinapps``)."""
    return kind.lower() + "s"


class RateLimits:
    """A token bucket per user (or per client address): ``qps`` calls a second, bursts of
    ``burst``."""

    def __init__(self, qps: float, burst: int) -> None:
        self.qps, self.burst = qps, burst
        self._buckets: TtlCache[str, TokenBucket] = TtlCache(ttl=3600.0)
        self._lock = threading.Lock()

    def retry_after(self, caller: Caller) -> float:
        """0 when the caller's call may go ahead, else the seconds to wait."""
        return self.retry_after_key(caller.user)

    def retry_after_key(self, key: str) -> float:
        """0 when a call of ``key`` (a user, an address) may go ahead, else the seconds to
        wait."""
        with self._lock:
            bucket = self._buckets.get(key)
            if bucket is None:
                bucket = TokenBucket(self.qps, self.burst)
            self._buckets.put(key, bucket)
        return bucket.try_take()


REVIEWS = (2.0, 20)
"""TokenReviews of tokens the cache does not know, per client address: a second, burst."""


def audit(caller: Caller | None, method: str, path: str, status: int, **detail: Any) -> None:
    """One JSON line per call: who, what, target, result (and ``detail``: an exec's pod,
    command and exit code)."""
    audit_log.info(json.dumps({
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "user": caller.user if caller else None, "method": method, "path": path,
        "status": status, **detail}))


class Audited:
    """ASGI middleware: an audit line for every HTTP call whose path ``audited`` says,
    written when its answer starts (a stream's too) or when it failed without one. The
    caller is what the call's authentication put in ``request.state.caller``. (A plain
    ASGI wrapper: Starlette's ``BaseHTTPMiddleware`` costs a task and a stream a call.)"""

    def __init__(self, app: ASGIApp, audited: Callable[[str], bool]) -> None:
        self.app, self.audited = app, audited

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not self.audited(path):
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        answered = False

        async def sending(message: Message) -> None:
            nonlocal answered
            if message["type"] == "http.response.start" and not answered:
                answered = True
                audit(state.get("caller"), scope["method"], path, message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except BaseException:
            if not answered:
                audit(state.get("caller"), scope["method"], path, 500)
            raise
