"""A member or host cluster as the API's one-shot reads see it: LISTs in a namespace with
label and field selectors (equality terms), one GET by name, kinds it does not serve."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes.dynamic.exceptions import ResourceNotFoundError


@dataclass
class Answer:
    data: bytes


class Resource:
    """One kind of a :class:`FakeCluster`."""

    def __init__(self, cluster: FakeCluster, api_version: str, kind: str) -> None:
        self.cluster, self.api_version, self.kind = cluster, api_version, kind

    def get(self, *, namespace: str | None = None, name: str | None = None,
            label_selector: str = "", field_selector: str = "", **_: Any) -> Any:
        self.cluster.lists.append((self.kind, label_selector or field_selector))
        items = [o for o in self.cluster.objects
                 if (o.get("apiVersion", "v1"), o["kind"]) == (self.api_version, self.kind)
                 and (namespace is None or o["metadata"].get("namespace") == namespace)
                 and _matches(o, label_selector, field_selector)]
        if name is not None:
            found = next(o for o in items if o["metadata"]["name"] == name)
            return type("Instance", (), {"to_dict": lambda _self: found})()
        return Answer(json.dumps({"items": items}).encode())


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

    def resource(self, api_version: str, kind: str) -> Resource:
        if api_version not in self.served:
            raise ResourceNotFoundError(f"{api_version} {kind}")
        return Resource(self, api_version, kind)


