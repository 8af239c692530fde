"""CustomResourceDefinitions for the pincompute.io kinds, from the same pydantic models.

The host cluster stores workloads (and their aggregated status) as custom resources. Each
kind's spec schema is the model's JSON Schema converted into a Kubernetes *structural*
schema: every ``$ref`` inlined, a ``type`` on every node, unions only in the forms the API
server accepts, no defaults (the stored object is exactly what is in git; defaults are named
in the descriptions instead).

``metadata.project``: a custom resource's ``metadata`` cannot carry extra fields, so a
workload's project is expressed the Kubernetes way: the resource lives in the project's
namespace and carries the label ``pincompute.io/project``. :func:`custom_resource` turns a
spec document into that form.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pincompile.crds.status_schema import (
    cluster_status,
    platform_status,
    project_status,
    scaler_status,
    workload_status,
)
from pincompile.crds.structural import Converter
from pincompile.models import API_VERSION, KINDS, PLATFORM_KINDS
from pincompile.models.docs import describe_fields

GROUP = "pincompute.io"
VERSION = "v1"
PROJECT_LABEL = "pincompute.io/project"
CATEGORY = "pincompute"
CRD_API_VERSION = "apiextensions.k8s.io/v1"
_DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
_NAME_MAX = 52

PROJECT_NOTE = (
    "The owning project is not a metadata field here (Kubernetes allows no extra metadata "
    f"fields): the resource lives in the project's namespace and carries the label "
    f"{PROJECT_LABEL}=<project>."
)


_AGE = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
_PROJECT_COLUMN = {"name": "Project", "type": "string",
                   "jsonPath": ".metadata.labels." + PROJECT_LABEL.replace(".", "\\."),
                   "description": "The owning project (label " + PROJECT_LABEL + ")."}


@dataclass(frozen=True)
class KindInfo:
    """How one kind is served by the host cluster."""

    kind: str
    scope: str
    status: dict[str, Any]
    columns: list[dict[str, Any]]

    @property
    def plural(self) -> str:
        return self.kind.lower() + "s"

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{GROUP}"


def kind_info(kind: str) -> KindInfo:
    """Scope, status schema and printer columns of one kind."""
    if kind == "Cluster":
        return KindInfo(kind, "Cluster", cluster_status(), [
            {"name": "Region", "type": "string", "jsonPath": ".spec.region"},
            {"name": "Zone", "type": "string", "jsonPath": ".spec.zone"},
            {"name": "Schedulable", "type": "boolean", "jsonPath": ".spec.schedulable"},
            {"name": "Phase", "type": "string", "jsonPath": ".status.phase"}, _AGE])
    if kind == "Project":
        return KindInfo(kind, "Cluster", project_status(), [
            {"name": "Namespace", "type": "string", "jsonPath": ".status.namespace"},
            {"name": "Ready", "type": "string",
             "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"}, _AGE])
    if kind == "PinterestSideCar":
        return KindInfo(kind, "Cluster", platform_status("whether the sidecar is in use"), [
            {"name": "Mode", "type": "string", "jsonPath": ".spec.mode"},
            {"name": "Inject", "type": "string", "jsonPath": ".spec.inject"}, _AGE])
    if kind == "RuntimeProfile":
        return KindInfo(kind, "Cluster", platform_status("whether the profile is applied"),
                        [_AGE])
    if kind == "PinScaler":
        return KindInfo(kind, "Namespaced", scaler_status(), [
            _PROJECT_COLUMN,
            {"name": "Target", "type": "string", "jsonPath": ".spec.target"},
            {"name": "Min", "type": "integer", "jsonPath": ".spec.minReplicas"},
            {"name": "Max", "type": "integer", "jsonPath": ".spec.maxReplicas"},
            {"name": "Replicas", "type": "integer", "jsonPath": ".status.currentReplicas"},
            _AGE])
    return KindInfo(kind, "Namespaced", workload_status(), [
        _PROJECT_COLUMN,
        {"name": "Tier", "type": "string", "jsonPath": ".spec.tier"},
        {"name": "Ready", "type": "string", "jsonPath": ".status.ready"},
        {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
        _AGE])


def _metadata_schema() -> dict[str, Any]:
    return {"type": "object", "properties": {"name": {
        "type": "string", "maxLength": _NAME_MAX, "pattern": _DNS_LABEL}}}


def openapi_schema(kind: str) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of one kind's custom resource."""
    describe_fields()
    model = KINDS[kind]
    info = kind_info(kind)
    source = model.model_json_schema(by_alias=True, mode="validation")
    defs = source.get("$defs") or {}
    converter = Converter(defs)
    spec_node = source["properties"]["spec"]
    spec = converter.convert(spec_node)
    doc = (model.__doc__ or kind).strip().splitlines()[0].rstrip(".")
    note = f" {PROJECT_NOTE}" if info.scope == "Namespaced" else ""
    schema: dict[str, Any] = {
        "type": "object",
        "description": f"{kind}: {doc}. Written in git; see the pincompile spec language.{note}",
        "properties": {
            "apiVersion": {"type": "string", "description": API_VERSION},
            "kind": {"type": "string", "description": kind},
            "metadata": _metadata_schema(),
            "spec": spec,
            "status": info.status,
        },
    }
    if "spec" in (source.get("required") or ()):
        schema["required"] = ["spec"]
    return schema


def crd(kind: str) -> dict[str, Any]:
    """The CustomResourceDefinition of one kind."""
    info = kind_info(kind)
    names: dict[str, Any] = {
        "kind": kind, "listKind": f"{kind}List", "plural": info.plural,
        "singular": kind.lower(), "categories": [CATEGORY] + (
            [f"{CATEGORY}-workloads"] if info.scope == "Namespaced" else []),
    }
    annotations = {"pincompute.io/generated-by": "pincompile crds"}
    if info.scope == "Namespaced":
        annotations["pincompute.io/project-from"] = (
            f"namespace and label {PROJECT_LABEL} (metadata.project of the spec)")
    definition = {
        "apiVersion": CRD_API_VERSION,
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": info.crd_name,
            "labels": {"app.kubernetes.io/managed-by": "pincompile",
                       "app.kubernetes.io/part-of": "pincompute"},
            "annotations": annotations,
        },
        "spec": {
            "group": GROUP,
            "names": names,
            "scope": info.scope,
            "versions": [{
                "name": VERSION,
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": openapi_schema(kind)},
                "subresources": {"status": {}},
                "additionalPrinterColumns": info.columns,
            }],
        },
    }
    # a plain tree: no shared sub-objects, so YAML output never needs anchors
    return json.loads(json.dumps(definition))  # type: ignore[no-any-return]


def all_crds(kinds: list[str] | None = None) -> list[dict[str, Any]]:
    """Every kind's CRD, platform kinds first, in the order the documentation lists them."""
    return [crd(kind) for kind in (kinds or list(KINDS))]


def custom_resource(document: Mapping[str, Any], *, namespace: str | None = None,
                    owned: bool = False) -> dict[str, Any]:
    """A spec document as the custom resource the host cluster stores.

    For workloads and PinScaler, ``metadata.project`` becomes the label
    ``pincompute.io/project`` and the resource is put in ``namespace`` (default: the
    project's name, which is also a Project's default namespace). ``owned``: the caller
    made ``document`` for this call, so it is used as it is, not deep-copied first.
    """
    data = dict(document) if owned else copy.deepcopy(dict(document))
    kind = str(data.get("kind", ""))
    meta = dict(data.get("metadata") or {})
    project = meta.pop("project", None)
    if kind not in PLATFORM_KINDS and project:
        meta["labels"] = {**(meta.get("labels") or {}), PROJECT_LABEL: str(project)}
        meta["namespace"] = namespace or str(project)
    data["metadata"] = meta
    return data


def to_yaml(documents: list[dict[str, Any]]) -> str:
    """Multi-document YAML in the project's canonical form (``pincompile.emit.output``)."""
    from pincompile.emit.output import to_yaml as canonical_yaml

    return "---\n".join(canonical_yaml(d) for d in documents)
