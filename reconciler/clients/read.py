"""Reading live state: one LIST per (cluster, kind) filtered by the managed-by label, and
a GET only for a desired object that no LIST returned (a create or a conflict), or for a
few objects a pass watches turn healthy (:func:`current`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypedDict

from pincompile.manifest import MANAGED_BY, MANAGED_BY_VALUE
from reconciler.clients.access import ClusterAccess
from reconciler.kinds import KindInfo
from reconciler.kinds import info as kind_info
from reconciler.model import Obj

MANAGED_SELECTOR = f"{MANAGED_BY}={MANAGED_BY_VALUE}"
Key = tuple[str, str, str]
"""(kind, namespace or "", name): unique among the kinds pincompile manages."""


def key_of(obj: Obj) -> Key:
    meta = obj["metadata"]
    return (str(obj["kind"]), str(meta.get("namespace") or ""), str(meta["name"]))


def served(access: ClusterAccess, kind: KindInfo) -> bool:
    """Whether the cluster serves ``kind`` (kubeflow kinds exist only where installed)."""
    return access.serves(kind.api_version, kind.kind)


class Selector(TypedDict, total=False):
    """The selector arguments of a LIST or WATCH."""

    field_selector: str
    label_selector: str


def selector(field_selector: str | None = None, label_selector: str | None = None,
             kind: KindInfo | None = None) -> Selector:
    """The LIST/WATCH selector: the one given, else pincompile's managed-by label (and
    ``kind``'s own selector)."""
    if field_selector:
        return {"field_selector": field_selector}
    if label_selector:
        return {"label_selector": label_selector}
    extra = kind.selector if kind is not None else ""
    return {"label_selector": f"{MANAGED_SELECTOR},{extra}" if extra else MANAGED_SELECTOR}


def ours(item: Obj, explicit: bool) -> bool:
    """Whether a listed or watched object is one pincompile applied: not one a controller
    made (with an ``ownerReference``: a Deployment's pods, a Job's pods, their volume
    claims), which carries our labels from the template. ``explicit``: the selector was
    the caller's own, and every object matching it counts."""
    return explicit or not (item.get("metadata") or {}).get("ownerReferences")


def list_managed(access: ClusterAccess, kind: KindInfo, *, field_selector: str | None = None,
                 label_selector: str | None = None, lean: bool = False
                 ) -> tuple[dict[Key, Obj], str]:
    """Every object of ``kind`` that pincompile manages in the cluster (or, given
    ``field_selector`` or ``label_selector``, every one matching it, owned or not), and
    the list's resourceVersion (for a watch to continue from). One LIST request.

    ``lean``: the objects without ``metadata.managedFields`` (:mod:`reconciler.clients.lean`:
    a pass's read, where nothing looks at them)."""
    explicit = bool(field_selector or label_selector)
    listed = access.list(kind, **selector(field_selector, label_selector, kind), lean=lean)
    found = {key_of(item): item for item in listed["items"] if ours(item, explicit)}
    return found, listed["resourceVersion"]


def list_many(access: ClusterAccess, kinds: Iterable[KindInfo], *, lean: bool = False
              ) -> dict[Key, Obj]:
    """:func:`list_managed` for several kinds, the LISTs in parallel."""
    from concurrent.futures import ThreadPoolExecutor

    found: dict[Key, Obj] = {}
    with ThreadPoolExecutor(max_workers=8) as pool:
        for objects, _ in pool.map(lambda kind: list_managed(access, kind, lean=lean),
                                   list(kinds)):
            found.update(objects)
    return found


def get(access: ClusterAccess, obj: Obj) -> Obj | None:
    """The live object with ``obj``'s identity, or None."""
    return access.get(obj)


GETS_PER_KIND = 16
"""More objects of one kind than this are read by one LIST of the kind, not a GET each."""


def current(access: ClusterAccess, objects: list[Obj],
            cached: dict[Key, Obj] | None = None) -> dict[Key, Obj | None]:
    """The live state of ``objects`` now (None: not there): from ``cached``, a watch
    cache's objects, when given (no request); else a GET each, or one lean LIST of each
    kind with more than :data:`GETS_PER_KIND` of them asked (a first pass at 1,000 apps
    waits for 3,000 objects per cluster: a GET each, every second, was 3,000 requests)."""
    if cached is not None:
        return {key_of(obj): cached.get(key_of(obj)) for obj in objects}
    by_kind: dict[tuple[str, str], list[Obj]] = {}
    for obj in objects:
        by_kind.setdefault((obj["apiVersion"], obj["kind"]), []).append(obj)
    found: dict[Key, Obj | None] = {}
    for (api_version, kind), asked in by_kind.items():
        if len(asked) > GETS_PER_KIND and (info := kind_info(kind)) is not None \
                and info.api_version == api_version:
            listed, _ = list_managed(access, info, lean=True)
            found.update({key_of(obj): listed.get(key_of(obj)) for obj in asked})
        else:
            found.update({key_of(obj): get(access, obj) for obj in asked})
    return found
