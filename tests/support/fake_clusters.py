"""A member or host cluster as the API's one-shot reads see it, through the
:class:`~reconciler.clients.access.ClusterAccess` verbs they use: LISTs in a namespace with
label and field selectors (equality terms) and a limit, one GET by name, kinds it does not
serve (objects as given: no server-set metadata, unlike :mod:`tests.support.kube_fake`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubernetes.dynamic.exceptions import ResourceNotFoundError

from reconciler.clients.access import Listed
from reconciler.kinds import KindInfo
from reconciler.model import Obj


def _matches(obj: Mapping[str, Any], labels: str, fields: str) -> bool:
    have = obj["metadata"].get("labels") or {}
    for term in filter(None, labels.split(",")):
        key, _, value = term.partition("=")
        if have.get(key) != value:
            return False
    for term in filter(None, fields.split(",")):
        path, _, value = term.partition("=")
        node: Any = obj
        for part in path.split("."):
            node = (node or {}).get(part)
        if node != value:
            return False
    return True


class FakeCluster:
    """What the timeline asks of a cluster: LISTs (with selectors) and one GET."""

    def __init__(self, name: str, objects: Iterable[dict[str, Any]],
                 served: Iterable[str] = ("v1", "apps/v1", "batch/v1",
                                          "autoscaling/v2", "pincompute.io/v1")) -> None:
        self.name, self.objects, self.served = name, list(objects), set(served)
        self.lists: list[tuple[str, str]] = []

    def _of(self, api_version: str, kind: str) -> list[Obj]:
        if api_version not in self.served:
            raise ResourceNotFoundError(f"{api_version} {kind}")
        return [o for o in self.objects
                if (o.get("apiVersion", "v1"), o["kind"]) == (api_version, kind)]

    def list(self, kind: KindInfo, *, namespace: str | None = None,
             label_selector: str | None = None, field_selector: str | None = None,
             limit: int | None = None, lean: bool = False) -> Listed:
        self.lists.append((kind.kind, label_selector or field_selector or ""))
        items = [o for o in self._of(kind.api_version, kind.kind)
                 if (namespace is None or o["metadata"].get("namespace") == namespace)
                 and _matches(o, label_selector or "", field_selector or "")]
        return {"items": items[:limit] if limit else items, "resourceVersion": "1"}

    def get(self, ref: Obj) -> Obj | None:
        meta = ref["metadata"]
        return next((o for o in self._of(ref["apiVersion"], ref["kind"])
                     if o["metadata"]["name"] == meta["name"]
                     and o["metadata"].get("namespace") == meta.get("namespace")), None)


