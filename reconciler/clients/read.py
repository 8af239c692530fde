"""Reading live state: one LIST per (cluster, kind) filtered by the managed-by label, and
a GET only for a desired object that no LIST returned (a create or a conflict)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import orjson
from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError

from pincompile.manifest import MANAGED_BY, MANAGED_BY_VALUE
from reconciler.clients.connect import Connection, ListTiming
from reconciler.clients.lean import decode_list
from reconciler.kinds import KindInfo
from reconciler.model import Obj

MANAGED_SELECTOR = f"{MANAGED_BY}={MANAGED_BY_VALUE}"
Key = tuple[str, str, str]
"""(kind, namespace or "", name): unique among the kinds pincompile manages."""


def plain(_client: Any, data: Obj) -> Obj:
    """A response as the parsed JSON itself (``serializer=plain``): the dynamic client's
    attribute wrappers cost more than the parse, on every object of a large LIST."""
    return data


def key_of(obj: Obj) -> Key:
    meta = obj["metadata"]
    return (str(obj["kind"]), str(meta.get("namespace") or ""), str(meta["name"]))


def served(conn: Connection, kind: KindInfo) -> bool:
    """Whether the cluster serves ``kind`` (kubeflow kinds exist only where installed)."""
    try:
        conn.resource(kind.api_version, kind.kind)
    except ResourceNotFoundError:
        return False
    return True


def selector(field_selector: str | None = None, label_selector: str | None = None,
             kind: KindInfo | None = None) -> dict[str, str]:
    """The LIST/WATCH selector: the one given, else pincompile's managed-by label (and
    ``kind``'s own selector)."""
    if field_selector:
        return {"field_selector": field_selector}
    if label_selector:
        return {"label_selector": label_selector}
    extra = kind.selector if kind is not None else ""
    return {"label_selector": f"{MANAGED_SELECTOR},{extra}" if extra else MANAGED_SELECTOR}


def list_managed(conn: Connection, kind: KindInfo, *, field_selector: str | None = None,
                 label_selector: str | None = None, lean: bool = False
                 ) -> tuple[dict[Key, Obj], str]:
    """Every object of ``kind`` that pincompile manages in the cluster (or, given
    ``field_selector`` or ``label_selector``, every one matching it, owned or not), and
    the list's resourceVersion (for a watch to continue from). One LIST request.

    Objects a controller made (with an ``ownerReference``: a Deployment's pods, a Job's
    pods, their volume claims) carry our labels from the template but are not ours.

    ``lean``: the objects without ``metadata.managedFields`` (:mod:`reconciler.clients.lean`:
    a pass's read, where nothing looks at them)."""
    explicit = bool(field_selector or label_selector)
    resource = conn.resource(kind.api_version, kind.kind)
    started = time.monotonic()
    response = resource.get(**selector(field_selector, label_selector, kind), serialize=False)
    body = response.data
    asked = time.monotonic()
    # both several times faster than the client's json.loads
    data: Obj = decode_list(body) if lean else orjson.loads(body)
    found: dict[Key, Obj] = {}
    for item in data.get("items") or []:
        if not explicit and (item.get("metadata") or {}).get("ownerReferences"):
            continue
        item.setdefault("apiVersion", kind.api_version)
        item.setdefault("kind", kind.kind)
        found[key_of(item)] = item
    conn.stats.timed(ListTiming(resource.name, asked - started, time.monotonic() - asked,
                                len(body), len(data.get("items") or [])))
    return found, str((data.get("metadata") or {}).get("resourceVersion") or "")


def list_many(conn: Connection, kinds: Iterable[KindInfo], *, lean: bool = False
              ) -> dict[Key, Obj]:
    """:func:`list_managed` for several kinds, the LISTs in parallel."""
    from concurrent.futures import ThreadPoolExecutor

    found: dict[Key, Obj] = {}
    with ThreadPoolExecutor(max_workers=8) as pool:
        for objects, _ in pool.map(lambda kind: list_managed(conn, kind, lean=lean), list(kinds)):
            found.update(objects)
    return found


def get(conn: Connection, obj: Obj) -> Obj | None:
    """The live object with ``obj``'s identity, or None."""
    meta = obj["metadata"]
    try:
        live: dict[str, Any] = conn.resource(obj["apiVersion"], obj["kind"]).get(
            name=meta["name"], namespace=meta.get("namespace"), serializer=plain)
    except NotFoundError:
        return None
    return live
