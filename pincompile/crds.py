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

#: Keys of JSON Schema that carry over unchanged to the Kubernetes schema of a value.
_VALUE_KEYS = ("enum", "pattern", "minLength", "maxLength", "minimum", "maximum", "multipleOf",
               "minItems", "maxItems", "minProperties", "maxProperties")
#: Formats the Kubernetes API server knows; others are dropped (the compiler checks them).
_K8S_FORMATS = frozenset({
    "bsonobjectid", "uri", "email", "hostname", "ipv4", "ipv6", "cidr", "mac", "uuid", "uuid3",
    "uuid4", "uuid5", "isbn", "isbn10", "isbn13", "creditcard", "ssn", "hexcolor", "rgbcolor",
    "byte", "password", "date", "duration", "datetime", "date-time", "int32", "int64", "float",
    "double",
})
_JSON_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number"}


# --- JSON Schema → structural schema ------------------------------------------------------------

class _Converter:
    """Turns one pydantic JSON Schema (with its ``$defs``) into a structural schema."""

    def __init__(self, defs: Mapping[str, Any]):
        self.defs = defs
        self.stack: list[str] = []

    def deref(self, node: Mapping[str, Any]) -> dict[str, Any]:
        """Inline a ``$ref`` (keeping the referring node's own description, if any)."""
        ref = node.get("$ref")
        if not isinstance(ref, str):
            return dict(node)
        target = dict(self.defs[ref.rsplit("/", 1)[-1]])
        target.update({k: v for k, v in node.items() if k != "$ref"})
        return target

    def convert(self, node: Mapping[str, Any]) -> dict[str, Any]:
        ref = node.get("$ref")
        if isinstance(ref, str):
            if ref in self.stack:  # a recursive model: store it as it comes
                return _describe({"x-kubernetes-preserve-unknown-fields": True}, node)
            self.stack.append(ref)
            try:
                return self.convert(self.deref(node))
            finally:
                self.stack.pop()
        branches = self._branches(node)
        if branches is not None and len(branches) == 1:
            # Optional[X]: the API server prunes nulls anyway; the field's own description
            # and default win over the referenced model's
            return self.convert({**branches[0], **{
                k: v for k, v in node.items() if k not in ("anyOf", "oneOf", "discriminator")}})
        out = self._union(node, branches) if branches is not None else self._single(node)
        return _describe(out, node)

    def _branches(self, node: Mapping[str, Any]) -> list[dict[str, Any]] | None:
        """The alternatives of an ``anyOf``/``oneOf`` node, flattened, without ``null``."""
        junctor = node.get("anyOf") or node.get("oneOf")
        if not junctor:
            return None
        out: list[dict[str, Any]] = []
        for branch in junctor:
            branch = self.deref(branch)
            nested = self._branches(branch)
            if nested is not None:
                outer = {k: v for k, v in branch.items() if k not in ("anyOf", "oneOf")}
                out.extend({**outer, **b} for b in nested)
            elif branch.get("type") != "null":
                out.append(branch)
        return out

    def _union(self, node: Mapping[str, Any], branches: list[dict[str, Any]]) -> dict[str, Any]:
        types = [_type_of(b) for b in branches]
        kinds = set(types)
        if "string" in kinds and kinds & {"integer", "number"} and kinds <= {
                "string", "integer", "number"}:
            out: dict[str, Any] = {"anyOf": [{"type": "integer"}, {"type": "string"}],
                                   "x-kubernetes-int-or-string": True}
            patterns = {b["pattern"] for b in branches if "pattern" in b}
            if len(patterns) == 1:
                out["pattern"] = patterns.pop()
            return out
        if kinds == {"object"}:
            return self._merge_objects(node, branches)
        if len(kinds) == 1 and types[0] in ("string", "integer", "number", "boolean"):
            out = {"type": types[0]}
            if all("enum" in _values(b) for b in branches):
                out["enum"] = _unique(v for b in branches for v in _values(b)["enum"])
            return out
        # e.g. "all" | [names]: no structural form exists; the compiler checks it exactly
        return {"x-kubernetes-preserve-unknown-fields": True,
                "_forms": "One of: " + "; or ".join(_form(b) for b in branches) + "."}

    def _merge_objects(self, node: Mapping[str, Any], branches: list[dict[str, Any]]
                       ) -> dict[str, Any]:
        """A union of objects (e.g. a discriminated union) as one object plus a ``oneOf``
        that keeps each alternative's required fields and enum narrowing."""
        props: dict[str, list[dict[str, Any]]] = {}
        for b in branches:
            for name, schema in (b.get("properties") or {}).items():
                props.setdefault(name, []).append(schema)
        merged = {name: (self.convert(s[0]) if len(s) == 1 else
                         self.convert({"anyOf": s})) for name, s in props.items()}
        out: dict[str, Any] = {"type": "object", "properties": merged}
        requireds = [set(b.get("required") or ()) for b in branches]
        common = set.intersection(*requireds) if requireds else set()
        if common:
            out["required"] = sorted(common, key=list(props).index)
        alternatives = []
        for b, req in zip(branches, requireds, strict=True):
            alt: dict[str, Any] = {}
            if req:
                alt["required"] = sorted(req, key=list(props).index)
            narrowed = {}
            for name, schema in (b.get("properties") or {}).items():
                enum = _values(self.deref(schema)).get("enum")
                if enum is not None and enum != merged[name].get("enum"):
                    narrowed[name] = {"enum": enum}
            if narrowed:
                alt["properties"] = narrowed
            alternatives.append(alt)
        if any(alternatives):
            out["oneOf" if "oneOf" in node else "anyOf"] = alternatives
        return out

    def _single(self, node: Mapping[str, Any]) -> dict[str, Any]:
        kind = _type_of(node)
        if kind == "object":
            return self._object(node)
        if kind == "array":
            items = node.get("items")
            out: dict[str, Any] = {"type": "array", "items": (
                self.convert(items) if isinstance(items, Mapping) else
                {"x-kubernetes-preserve-unknown-fields": True})}
            out.update({k: node[k] for k in ("minItems", "maxItems") if k in node})
            return out
        if kind is None:  # Any
            return {"x-kubernetes-preserve-unknown-fields": True}
        out = {"type": kind, **_values(node)}
        fmt = node.get("format")
        if isinstance(fmt, str) and fmt in _K8S_FORMATS:
            out["format"] = fmt
        return out

    def _object(self, node: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "object"}
        props = node.get("properties") or {}
        extra = node.get("additionalProperties")
        keys = (node.get("propertyNames") or {}).get("enum")
        if props:
            out["properties"] = {name: self.convert(s) for name, s in props.items()}
            required = [r for r in node.get("required") or () if r in props]
            if required:
                out["required"] = required
            if extra is True or isinstance(extra, Mapping):
                out["x-kubernetes-preserve-unknown-fields"] = True
        elif isinstance(extra, Mapping) and extra and keys:
            # a mapping with a fixed set of keys (e.g. cpu/memory/...): one property each
            value = self.convert(extra)
            out["properties"] = {str(k): copy.deepcopy(value) for k in keys}
        elif isinstance(extra, Mapping) and extra:
            out["additionalProperties"] = self.convert(extra)
        else:  # a free-form mapping
            out["x-kubernetes-preserve-unknown-fields"] = True
        return out


def _type_of(node: Mapping[str, Any]) -> str | None:
    kind = node.get("type")
    if isinstance(kind, str):
        return kind
    values = node.get("enum") or ([node["const"]] if "const" in node else [])
    found = {_JSON_TYPES.get(type(v)) for v in values}
    if len(found) == 1:
        return found.pop()
    if "properties" in node or "additionalProperties" in node:
        return "object"
    if "items" in node:
        return "array"
    return None


def _values(node: Mapping[str, Any]) -> dict[str, Any]:
    """Value validations of a scalar node in Kubernetes form (const → enum, exclusive bounds
    as OpenAPI 3.0 booleans)."""
    out = {k: node[k] for k in _VALUE_KEYS if k in node}
    if "const" in node:
        out["enum"] = [node["const"]]
    for key, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        value = node.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[bound] = value
            out[key] = True
    return out


def _unique(values: Any) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if v not in out:
            out.append(v)
    return out


def _form(branch: Mapping[str, Any]) -> str:
    enum = _values(branch).get("enum")
    if enum:
        return " or ".join(json.dumps(v) for v in enum)
    kind = _type_of(branch)
    return {"array": "a list", "object": "a mapping"}.get(kind or "", f"a {kind or 'value'}")


def _describe(out: dict[str, Any], node: Mapping[str, Any]) -> dict[str, Any]:
    """Carry the description over, naming the default (the schema itself sets none)."""
    text = str(node.get("description") or out.get("description") or "").strip()
    default = node.get("default")
    if default not in (None, [], {}) and "default" not in text.lower():
        shown = json.dumps(default, ensure_ascii=False)
        if len(shown) <= 60:
            text = f"{text} Default: {shown}."
    text = f"{text} {out.pop('_forms', '')}".strip()
    if text:
        out["description"] = text
    return out


def structural_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A pydantic JSON Schema as a Kubernetes structural schema."""
    return _Converter(schema.get("$defs") or {}).convert(
        {k: v for k, v in schema.items() if k != "$defs"})


# --- status -------------------------------------------------------------------------------------

def _int(description: str) -> dict[str, Any]:
    return {"type": "integer", "format": "int32", "minimum": 0, "description": description}


def _str(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **extra}


_TIME = {"type": "string", "format": "date-time"}
_CONDITIONS = {
    "type": "array",
    "description": "Latest observations (Kubernetes condition conventions), e.g. Ready, "
                   "Progressing, Compiled.",
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["type"],
    "items": {
        "type": "object",
        "required": ["type", "status"],
        "properties": {
            "type": _str("Condition type, e.g. Ready.", maxLength=316),
            "status": _str("True, False or Unknown.", enum=["True", "False", "Unknown"]),
            "reason": _str("One CamelCase word saying why.", maxLength=1024),
            "message": _str("What happened, for people.", maxLength=32768),
            "lastTransitionTime": {**_TIME, "description": "When status last changed."},
            "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0,
                                   "description": "metadata.generation the condition is for."},
        },
    },
}
_QUANTITIES = {"type": "object", "additionalProperties": {
    "anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}}


def _common_status() -> dict[str, Any]:
    return {
        "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0,
                               "description": "The metadata.generation last acted on."},
        "observedRevision": _str("The git revision last compiled and applied."),
        "conditions": copy.deepcopy(_CONDITIONS),
        "message": _str("A human summary of the current state."),
    }


WORKLOAD_PHASES = ["Healthy", "Progressing", "Degraded", "Failed", "Suspended", "Missing",
                   "Unknown"]


def workload_status() -> dict[str, Any]:
    """Aggregated status of a workload over every member cluster it is placed in."""
    counts = {
        "replicas": _int("Desired pods (replicas, shards or training replicas)."),
        "readyReplicas": _int("Pods that are ready."),
        "updatedReplicas": _int("Pods that run the current revision."),
        "active": _int("Job pods running (job kinds)."),
        "succeeded": _int("Job pods or shards that finished successfully (job kinds)."),
        "failed": _int("Job pods or shards that failed (job kinds)."),
    }
    cluster = {
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": _str("Member cluster name."),
            "phase": _str("Phase in this cluster.", enum=WORKLOAD_PHASES),
            **copy.deepcopy(counts),
            "observedRevision": _str("The git revision applied to this cluster."),
            "lastSyncTime": {**_TIME, "description": "When this cluster was last reconciled."},
            "message": _str("Why the cluster is not Ready, if it is not."),
            "conditions": copy.deepcopy(_CONDITIONS),
        },
    }
    return {
        "type": "object",
        "description": "Written by the reconciler: the workload over all its member clusters.",
        "properties": {
            "phase": _str("Overall phase; the worst of the clusters' phases.",
                          enum=WORKLOAD_PHASES),
            "ready": _str("Ready pods over desired pods, e.g. \"12/12\" (for kubectl get)."),
            **counts,
            **_common_status(),
            "lastAppliedRevision": _str("The git revision of the last pass that changed "
                                        "something of this app."),
            "lastAppliedTime": {**_TIME, "description": "When that pass ran."},
            "rollout": _rollout_status(),
            "failover": _app_failover_status(),
            "clusters": {
                "type": "array",
                "description": "Per member cluster the workload is placed in.",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": cluster,
            },
        },
    }


def _rollout_status() -> dict[str, Any]:
    return {
        "type": "object",
        "description": "Zone-by-zone rollout: which template is going where.",
        "properties": {
            "target": _str("Digest of the pod templates being rolled out."),
            "revision": _str("The git revision that started this rollout."),
            "zones": {"type": "array", "items": {"type": "string"},
                      "description": "Zones in rollout order."},
            "zoneIndex": _int("Index of the zone being rolled out (= number of zones when "
                              "complete)."),
            "zone": _str("The zone being rolled out (empty when complete)."),
            "phase": _str("Progressing, Halted or Complete.",
                          enum=["Progressing", "Halted", "Complete"]),
            "message": _str("Why the rollout halted, if it did."),
            "since": {**_TIME, "description": "When the current zone started."},
        },
    }


def _app_failover_status() -> dict[str, Any]:
    counts = {"type": "object", "additionalProperties": {"type": "integer", "format": "int32"}}
    return {
        "type": "object",
        "description": "Set while a member cluster the workload runs in is lost or returning: "
                       "where its share runs meanwhile.",
        "properties": {
            "phase": _str("FailedOver (a cluster is lost), FailingBack (its share moves back "
                          "in steps) or Stranded (a PinPod with failover: false).",
                          enum=["FailedOver", "FailingBack", "Stranded"]),
            "clusters": {"type": "array", "items": {"type": "string"},
                         "description": "The lost or returning clusters."},
            "message": _str("What moved where, for people."),
            "replicas": {**counts, "description": "Replicas per cluster now."},
            "normalReplicas": {**copy.deepcopy(counts),
                               "description": "Replicas per cluster where the specs put them."},
            "failback": {"type": "object", "description": "Progress moving back.",
                         "properties": {"back": _int("Replicas back already."),
                                        "of": _int("Replicas to move back in all.")}},
        },
    }


def scaler_status() -> dict[str, Any]:
    status = workload_status()
    status["description"] = ("Written by the reconciler: the scaler's HPAs over all member "
                             "clusters, and what the autoscaler decided.")
    status["properties"].update({
            "currentReplicas": _int("Replicas running over all clusters."),
            "desiredReplicas": _int("Replicas the scaler last asked for."),
            "floor": _int("The effective minimum now (a schedule may raise minReplicas)."),
            "activeSchedule": _str("The cron of the schedule in force, if any."),
            "lastScaleTime": {**_TIME, "description": "When the replica count last changed."},
            "rebalance": {
                "type": "object",
                "description": "HPA maxima moved toward clusters that ran at their maximum "
                               "while others had room (they add up to maxReplicas).",
                "properties": {
                    "maxReplicas": {"type": "object", "description": "Per cluster, now.",
                                    "additionalProperties": {"type": "integer"}},
                    "basis": {"type": "object", "description": "Per cluster, as compiled.",
                              "additionalProperties": {"type": "integer"}},
                    "reason": _str("Why the last move was made."),
                    "since": {**_TIME, "description": "When the last move was made."},
                },
            },
    })
    return status


def cluster_status() -> dict[str, Any]:
    return {
        "type": "object",
        "description": "Written by the reconciler: whether the member cluster is reachable.",
        "properties": {
            "phase": _str("Ready, NotReady, Cordoned or Unknown (unreachable).",
                          enum=["Ready", "NotReady", "Cordoned", "Unknown"]),
            "kubernetesVersion": _str("The version its API server reports."),
            "lastProbeTime": {**_TIME, "description": "When the cluster was last reached."},
            "allocatable": {**copy.deepcopy(_QUANTITIES),
                            "description": "Sum of its nodes' allocatable resources."},
            "allocated": {
                "type": "object", "description": "Requests placed here, per tier.",
                "additionalProperties": copy.deepcopy(_QUANTITIES)},
            "failover": {
                "type": "object",
                "description": "Failover state: a cluster unreachable past the grace period "
                               "(or cordoned) is Lost and its share of every app runs "
                               "elsewhere; once it answers again it is Returning.",
                "properties": {
                    "phase": _str("Reachable, Unreachable (under the grace period), Lost or "
                                  "Returning.",
                                  enum=["Reachable", "Unreachable", "Lost", "Returning"]),
                    "reason": _str("Why, for people."),
                    "since": {**_TIME, "description": "When the phase began."},
                    "unreachableSince": {**_TIME, "description": "Start of the current run "
                                                                 "of failed passes."},
                    "failbackSteps": _int("Returning: failback steps taken."),
                },
            },
            **_common_status(),
        },
    }


def project_status() -> dict[str, Any]:
    return {
        "type": "object",
        "description": "Written by the reconciler: the project's namespace and quota use.",
        "properties": {
            "namespace": _str("The namespace its workloads live in."),
            "usage": {"type": "object", "description": "Requests in use, per tier.",
                      "additionalProperties": copy.deepcopy(_QUANTITIES)},
            **_common_status(),
        },
    }


def platform_status(what: str) -> dict[str, Any]:
    return {"type": "object", "description": f"Written by the reconciler: {what}.",
            "properties": _common_status()}


# --- CRDs ---------------------------------------------------------------------------------------

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
    converter = _Converter(defs)
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


def custom_resource(document: Mapping[str, Any], *, namespace: str | None = None
                    ) -> dict[str, Any]:
    """A spec document as the custom resource the host cluster stores.

    For workloads and PinScaler, ``metadata.project`` becomes the label
    ``pincompute.io/project`` and the resource is put in ``namespace`` (default: the
    project's name, which is also a Project's default namespace).
    """
    data = copy.deepcopy(dict(document))
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
