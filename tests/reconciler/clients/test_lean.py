"""A pass's LISTs decoded lean: every field but ``metadata.managedFields`` kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from pincompile.compiler import compile_path
from reconciler import host, kinds
from reconciler.clients.lean import TOP_LEVEL, decode_list

REPO = Path(__file__).resolve().parents[3]

DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {
        "name": "web", "namespace": "ads", "uid": "0c7a5b1e-1111", "resourceVersion": "812",
        "generation": 3, "creationTimestamp": "2026-11-26T19:22:00Z",
        "labels": {"app.kubernetes.io/managed-by": "pincompile"},
        "annotations": {"pincompute.io/applied-digest": "abc"},
        "finalizers": ["x/y"],
        "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "o", "uid": "u"}],
        "managedFields": [{"manager": "pincompile", "operation": "Apply",
                           "fieldsV1": {"f:spec": {"f:replicas": {}}}}]},
    "spec": {"replicas": 3, "paused": False, "template": {"spec": {"containers": [
        {"name": "main", "image": "a:1", "resources": {"requests": {"cpu": 0.5}}}]}}},
    "status": {"readyReplicas": 3, "conditions": [{"type": "Available", "status": "True"}]},
}


def _list(*items: dict[str, Any], **meta: Any) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "List",
                         "metadata": {"resourceVersion": "900", **meta}, "items": list(items)})


def _without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
    return {**obj, "metadata": meta}


def test_everything_but_managed_fields_is_kept_as_plain_values() -> None:
    config_map = {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": "c", "managedFields": [{"manager": "m"}]},
                  "data": {"k": "v"}, "binaryData": {"b": "AA=="}, "immutable": True}
    data = decode_list(_list(DEPLOYMENT, config_map))
    assert data["metadata"]["resourceVersion"] == "900"
    assert data["items"] == [_without_managed_fields(DEPLOYMENT),
                             _without_managed_fields(config_map)]
    spec = data["items"][0]["spec"]
    assert spec["paused"] is False and spec["template"]["spec"]["containers"][0][
        "resources"]["requests"]["cpu"] == 0.5  # a bool stays a bool, a float a float


def test_a_body_off_the_schema_is_decoded_in_full_without_managed_fields() -> None:
    odd = {**DEPLOYMENT, "metadata": {**DEPLOYMENT["metadata"], "generation": "3"}}
    data = decode_list(_list(odd))
    assert data["items"] == [_without_managed_fields(odd)]


def test_an_empty_list_has_no_items() -> None:
    assert not decode_list(b'{"metadata": {"resourceVersion": "1"}, "items": null}')["items"]


def test_every_field_pincompile_sets_survives_a_lean_read() -> None:
    """A field the lean decode dropped would look missing from every live object of its
    kind: a dry-run, then an update, in every pass."""
    result = compile_path(REPO / "examples", revision="lean")
    assert result.ok
    made = {m.obj["kind"] for m in result.manifests}
    assert made == {k.kind for k in kinds.MANAGED_KINDS}  # so every managed kind is checked
    top = {key for m in result.manifests for key in m.obj}
    top |= {key for cr in host.desired_objects(result.catalog, "lean") for key in cr}
    assert top <= TOP_LEVEL, sorted(top - TOP_LEVEL)
