"""Writing: server-side apply (real and dry-run), delete, status. Every write is made with
field manager ``pincompile`` (:data:`~reconciler.clients.connect.FIELD_MANAGER`)."""

from __future__ import annotations

import time
from typing import Any

from kubernetes.dynamic.exceptions import NotFoundError

from reconciler.clients.connect import FIELD_MANAGER, Connection
from reconciler.clients.read import plain
from reconciler.model import Obj


def apply(conn: Connection, obj: Obj, *, dry_run: bool = False,
          manager: str = FIELD_MANAGER, subresource: str | None = None) -> Obj:
    """Server-side apply of ``obj`` (forcing ownership of the fields it sets)."""
    meta = obj["metadata"]
    resource = conn.resource(obj["apiVersion"], obj["kind"])
    if subresource:
        resource = resource.subresources[subresource]
    extra: dict[str, Any] = {"dry_run": "All"} if dry_run else {}
    result: Obj = conn.dynamic.server_side_apply(
        resource, body=obj, name=meta["name"], namespace=meta.get("namespace"),
        field_manager=manager, force_conflicts=True, serializer=plain, **extra)
    return result


def delete(conn: Connection, obj: Obj, *, propagation: str = "Background") -> bool:
    """Delete the object; False when it was already gone."""
    meta = obj["metadata"]
    try:
        conn.resource(obj["apiVersion"], obj["kind"]).delete(
            name=meta["name"], namespace=meta.get("namespace"),
            propagation_policy=propagation)
    except NotFoundError:
        return False
    return True


def wait_gone(conn: Connection, obj: Obj, *, uid: str | None, timeout: float = 120.0) -> bool:
    """Wait until the object with ``uid`` is gone (finalizers done); True when it is."""
    from reconciler.clients.read import get

    deadline = time.monotonic() + timeout
    delay = 0.2
    while time.monotonic() < deadline:
        live = get(conn, obj)
        if live is None or (uid and live["metadata"].get("uid") != uid):
            return True
        time.sleep(delay)
        delay = min(delay * 1.5, 2.0)
    return False
