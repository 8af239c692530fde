"""Who is calling and what they may do: bearer tokens checked with a TokenReview on the
host cluster, each call authorized with a SubjectAccessReview against the app's resource
there (so the host's RBAC is the one policy), a rate limit per user, an audit line per call.

Decisions are cached for ``ttl`` seconds like the API server's webhook authorizer does,
in bounded caches; a token is cached by its SHA-256, never kept in clear.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from kubernetes.dynamic.exceptions import DynamicApiError

from reconciler.clients.connect import ClusterUnreachable, Connection, TokenBucket

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
}
"""What a call does → (RBAC verb, subresource) on the app's kind in its project."""


@dataclass(frozen=True)
class Caller:
    user: str
    groups: tuple[str, ...] = ()


class AccessError(Exception):
    """The call is refused: ``status`` 401 (who?), 403 (not allowed) or 503 (host down)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Access(Protocol):
    def authenticate(self, token: str) -> Caller: ...

    def allowed(self, caller: Caller, action: str, kind: str, project: str) -> bool: ...


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

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._items[key] = (time.monotonic() + self.ttl, value)
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)


class HostAccess:
    """TokenReview and SubjectAccessReview on the host cluster."""

    def __init__(self, host: Connection, *, ttl: float = 10.0) -> None:
        self.host = host
        self._callers: TtlCache[str, Caller | None] = TtlCache(ttl)
        self._decisions: TtlCache[tuple[Caller, str, str, str], bool] = TtlCache(ttl)

    def authenticate(self, token: str) -> Caller:
        digest = hashlib.sha256(token.encode()).hexdigest()
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

    def _create(self, api_version: str, kind: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            created = self.host.resource(api_version, kind).create(
                body={"apiVersion": api_version, "kind": kind, **body})
        except ClusterUnreachable as exc:
            raise AccessError(503, f"the host cluster cannot check access: {exc}") from None
        except DynamicApiError as exc:
            raise AccessError(503, f"the host cluster refused the {kind}: "
                                   f"{exc.summary()}") from None
        return dict(created.to_dict())


def plural(kind: str) -> str:
    """The resource name of an app kind on the host (``PinApp`` → ``pinapps``)."""
    return kind.lower() + "s"


class RateLimits:
    """A token bucket per user: ``qps`` calls a second, bursts of ``burst``."""

    def __init__(self, qps: float, burst: int) -> None:
        self.qps, self.burst = qps, burst
        self._buckets: TtlCache[str, TokenBucket] = TtlCache(ttl=3600.0)
        self._lock = threading.Lock()

    def retry_after(self, caller: Caller) -> float:
        """0 when the call may go ahead, else the seconds to wait."""
        with self._lock:
            bucket = self._buckets.get(caller.user)
            if bucket is None:
                bucket = TokenBucket(self.qps, self.burst)
            self._buckets.put(caller.user, bucket)
        return bucket.try_take()


def audit(caller: Caller | None, method: str, path: str, status: int, **detail: Any) -> None:
    """One JSON line per call: who, what, target, result (and ``detail``: an exec's pod,
    command and exit code)."""
    audit_log.info(json.dumps({
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "user": caller.user if caller else None, "method": method, "path": path,
        "status": status, **detail}))
