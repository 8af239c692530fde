"""A pass's LIST responses decoded without ``metadata.managedFields``.

A pass compares what it would apply with what is live (:mod:`reconciler.plan.applied`) and reads
the status of what it finds; nothing in it reads the field managers of a LISTed object
(a GET fetches them where a decision needs them). Yet managedFields are ~45% of a LIST's
bytes at 1,000 apps (Deployments, Services, PodDisruptionBudgets, HPAs), and building them
as Python objects was most of the read's CPU. Decoding against :class:`_List` skips them
(and any key outside it) inside msgspec's C decoder: 4-6x faster than ``orjson.loads`` of
the same body, and the objects are plain dicts and lists as before.

A body that does not fit the schema (a metadata field of another type, say) is decoded in
full by orjson instead: never an error, only slower.
"""

from __future__ import annotations

from typing import Any, TypedDict

import msgspec
import orjson

from reconciler.model import Obj


class _Meta(TypedDict, total=False):
    """``ObjectMeta`` without ``managedFields``."""

    name: str
    generateName: str
    namespace: str
    uid: str
    resourceVersion: str
    generation: int
    creationTimestamp: str
    deletionTimestamp: str
    deletionGracePeriodSeconds: int
    labels: dict[str, str]
    annotations: dict[str, str]
    ownerReferences: list[Any]
    finalizers: list[str]
    selfLink: str


class _Item(TypedDict, total=False):
    """The top-level fields of every kind pincompile manages (``spec``/``status``; a
    ConfigMap's data, a PriorityClass's value and policy, a RoleBinding's subjects and
    role) and of the host's spec resources."""

    apiVersion: str
    kind: str
    metadata: _Meta
    spec: Any
    status: Any
    data: Any
    binaryData: Any
    immutable: Any
    value: Any
    globalDefault: Any
    description: Any
    preemptionPolicy: Any
    subjects: Any
    roleRef: Any


TOP_LEVEL = frozenset(_Item.__annotations__)
"""The top-level fields a lean decode keeps."""


class _ListMeta(TypedDict, total=False):
    resourceVersion: str


class _List(TypedDict, total=False):
    metadata: _ListMeta
    items: list[_Item] | None


_DECODER: msgspec.json.Decoder[Any] = msgspec.json.Decoder(_List)


def decode_list(body: bytes | str) -> Obj:
    """A LIST response (``{"metadata": ..., "items": [...]}``), its items without
    managedFields."""
    try:
        data: Obj = _DECODER.decode(body)
    except msgspec.ValidationError:
        data = orjson.loads(body)
        for item in data.get("items") or []:
            (item.get("metadata") or {}).pop("managedFields", None)
    return data
