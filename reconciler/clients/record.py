"""Record every API request as the RBAC authorizer sees it: (verb, group, resource,
subresource, namespace) and when it was sent (``at``, Unix seconds), one JSON line each, when
``PINCOMPILE_RECORD_REQUESTS=FILE`` is set.

Tests run ``serve`` (or ``apply``) with it and check that the shipped RBAC allows every
request that was made (``tests/reconciler/serve/test_serve_e2e.py``).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import parse_qs, urlparse

RECORD_ENV = "PINCOMPILE_RECORD_REQUESTS"
_METHOD_VERB = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
_lock = threading.Lock()


@dataclass(frozen=True)
class AccessRequest:
    """One request in RBAC terms. ``resource`` is empty for a non-resource URL (``path``)."""

    cluster: str
    verb: str
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""
    dry_run: bool = False
    """A server-side dry-run (authorized as the write it simulates)."""


def access_request(cluster: str, method: str, url: str) -> AccessRequest:
    """What the API server's authorizer is asked for this request.

    A dry-run is authorized as the write it simulates; a GET is ``get``, ``list`` or
    ``watch``; a path outside ``/api`` and ``/apis`` resources (discovery, ``/version``)
    is a non-resource request, verb ``get``."""
    parsed = urlparse(url)
    query = parse_qs(parsed.query)
    parts = [p for p in parsed.path.split("/") if p]
    method = method.upper()
    if parts[:1] == ["api"] and len(parts) > 2:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) > 3:
        group, rest = parts[1], parts[3:]
    else:
        return AccessRequest(cluster, method.lower(), path=parsed.path)
    namespace = ""
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    resource, name = rest[0], (rest[1] if len(rest) > 1 else "")
    subresource = rest[2] if len(rest) > 2 else ""
    if method == "GET":
        verb = "watch" if query.get("watch") in (["true"], ["1"]) else (
            "get" if name else "list")
    elif method == "DELETE" and not name:
        verb = "deletecollection"
    else:
        verb = _METHOD_VERB.get(method, method.lower())
    if resource == "namespaces" and not namespace and name and verb != "create":
        namespace = name  # the authorizer sees a namespace's own name as its namespace
    return AccessRequest(cluster, verb, group, resource, subresource, namespace, name,
                         dry_run=bool(query.get("dryRun")))


def recorder(cluster: str) -> Callable[[str, str], None] | None:
    """A callable ``(method, url) -> None`` appending to ``$PINCOMPILE_RECORD_REQUESTS``,
    or None when the variable is not set."""
    target = os.environ.get(RECORD_ENV)
    if not target:
        return None

    def record(method: str, url: str) -> None:
        line = json.dumps({**asdict(access_request(cluster, method, url)),
                           "at": round(time.time(), 3)}, sort_keys=True)
        with _lock, open(target, "a", encoding="utf-8") as out:
            out.write(line + "\n")

    return record


def record_requests(api: Any, cluster: str) -> None:
    """Record every request of a plain ``kubernetes.client.ApiClient`` (when enabled)."""
    record = recorder(cluster)
    if record is None:
        return
    inner = api.rest_client.request

    def request(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        record(method, url)
        return inner(method, url, *args, **kwargs)

    api.rest_client.request = request


def read_requests(path: str) -> list[AccessRequest]:
    """The requests a recording run wrote."""
    with open(path, encoding="utf-8") as lines:
        return [AccessRequest(**{k: v for k, v in json.loads(line).items() if k != "at"})
                for line in lines if line.strip()]
