"""Writing: server-side apply (real and dry-run), a create by server-side apply, delete.
Every write is made with field manager ``pincompile``
(:data:`~reconciler.clients.access.FIELD_MANAGER`) unless it names another."""

from __future__ import annotations

import time

from reconciler.clients.access import FIELD_MANAGER, ClusterAccess
from reconciler.clients.read import get
from reconciler.model import Obj


def apply(access: ClusterAccess, obj: Obj, *, dry_run: bool = False,
          manager: str = FIELD_MANAGER, subresource: str | None = None) -> Obj:
    """Server-side apply of ``obj`` (forcing ownership of the fields it sets)."""
    return access.apply(obj, manager=manager, dry_run=dry_run, subresource=subresource)


CREATE_ONLY = str(2**64 - 1)
"""A ``resourceVersion`` no object holds (the largest the API server accepts). As an
apply's precondition it creates a missing object — the API server checks a precondition
only against an object it holds — and is refused (409) for a name that any object holds,
which the apply then leaves exactly as it is."""


def create(access: ClusterAccess, obj: Obj, *, manager: str = FIELD_MANAGER) -> Obj:
    """Server-side apply of an object only if its name is free: the object as created;
    :class:`~kubernetes.dynamic.exceptions.ConflictError` when any object holds the name
    (a server-side apply would take that one over)."""
    meta = {**obj["metadata"], "resourceVersion": CREATE_ONLY}
    return access.apply({**obj, "metadata": meta}, manager=manager)


def delete(access: ClusterAccess, obj: Obj, *, propagation: str = "Background") -> bool:
    """Delete the object; False when it was already gone."""
    return access.delete(obj, propagation=propagation)


def wait_gone(access: ClusterAccess, obj: Obj, *, uid: str | None, timeout: float = 120.0
              ) -> bool:
    """Wait until the object with ``uid`` is gone (finalizers done); True when it is."""
    deadline = time.monotonic() + timeout
    delay = 0.2
    while time.monotonic() < deadline:
        live = get(access, obj)
        if live is None or (uid and live["metadata"].get("uid") != uid):
            return True
        time.sleep(delay)
        delay = min(delay * 1.5, 2.0)
    return False
