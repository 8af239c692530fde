"""The CRDs of the pincompute.io kinds: structural, valid apiextensions v1, and faithful to
the models (every example spec validates against its CRD's schema)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
from click.testing import CliRunner
from structural import problems

from pincompile.cli import cli
from pincompile.crds import (
    GROUP,
    PROJECT_LABEL,
    all_crds,
    crd,
    custom_resource,
    openapi_schema,
    to_yaml,
)
from pincompile.crds.structural import structural_schema
from pincompile.models import KINDS, PLATFORM_KINDS
from pincompile.source.loader import load_tree

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples"
ALL_KINDS = list(KINDS)


def schema_of(kind: str) -> dict[str, Any]:
    return crd(kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]  # type: ignore[no-any-return]


def validator(kind: str) -> jsonschema.Draft4Validator:
    """OpenAPI v3.0 schemas are close to draft 4 (boolean exclusiveMinimum, no const)."""
    return jsonschema.Draft4Validator(schema_of(kind))


# --- the structural checker itself must catch what it claims to ---------------------------------

@pytest.mark.parametrize(("schema", "expected"), [
    ({"type": "object", "properties": {"a": {"$ref": "#/x"}}}, "'$ref' is not allowed"),
    ({"type": "object", "properties": {"a": {"description": "untyped"}}}, ".a: no type"),
    ({"type": "object", "properties": {"a": {"type": "string"}},
      "anyOf": [{"properties": {"a": {"type": "string"}}}]}, "'type' is not allowed inside"),
    ({"type": "object", "properties": {"a": {"type": "string"}},
      "oneOf": [{"required": ["b"]}]}, "requires 'b', which is not specified outside"),
    ({"type": "object", "properties": {"a": {"type": "string"}},
      "anyOf": [{"properties": {"b": {"enum": ["x"]}}}]}, "property 'b' is not specified"),
    ({"type": "object", "anyOf": [{"description": "x"}]}, "'description' is not allowed"),
    ({"type": "object", "additionalProperties": False}, "additionalProperties: false"),
    ({"type": "object", "properties": {"a": {"type": "string"}},
      "additionalProperties": {"type": "string"}}, "mutually exclusive"),
    ({"type": "object", "properties": {"metadata": {"type": "object", "properties": {
        "project": {"type": "string"}}}}}, "only name and generateName"),
    ({"type": "array", "items": {"type": "string"}, "uniqueItems": True}, "uniqueItems"),
    ({"type": "string", "const": "x"}, "'const' is not a JSONSchemaProps field"),
    ({"type": "integer", "minimum": 1, "exclusiveMinimum": 1}, "must be a boolean"),
    ({"x-kubernetes-int-or-string": True, "anyOf": [{"type": "string"}]}, "exactly"),
    ({"type": "array"}, "an array needs items"),
    ({"type": "string", "pattern": "^(?!x)"}, "lookaround"),
    ({"type": "string", "default": "x"}, "'default' is not allowed"),
    ({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
      "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
     "must be required"),
])
def test_the_checker_catches(schema: dict[str, Any], expected: str) -> None:
    found = problems(schema)
    assert any(expected in p for p in found), found


def test_the_checker_accepts_the_allowed_forms() -> None:
    assert problems({
        "type": "object",
        "properties": {
            "metadata": {"type": "object", "properties": {"name": {"type": "string"}}},
            "port": {"x-kubernetes-int-or-string": True, "anyOf": INT_OR_STRING},
            "free": {"x-kubernetes-preserve-unknown-fields": True},
            "m": {"type": "object", "properties": {"t": {"type": "string"}}},
        },
        "anyOf": [{"required": ["port"]}, {"properties": {"m": {"properties": {
            "t": {"enum": ["a"]}}}}}],
    }) == []


INT_OR_STRING = [{"type": "integer"}, {"type": "string"}]


# --- the CRDs -----------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ALL_KINDS)
def test_every_crd_is_structural(kind: str) -> None:
    assert problems(schema_of(kind)) == []


@pytest.mark.parametrize("version", ["1.29", kubernetes_validate.latest_version()])
def test_crds_are_valid_apiextensions_v1(version: str) -> None:
    for definition in all_crds():
        kubernetes_validate.validate(definition, version, strict=True)


def test_names_scope_and_versions() -> None:
    crds = {c["spec"]["names"]["kind"]: c for c in all_crds()}
    assert list(crds) == ALL_KINDS
    for kind, c in crds.items():
        spec = c["spec"]
        assert c["metadata"]["name"] == f"{kind.lower()}s.{GROUP}"
        assert spec["group"] == GROUP and spec["names"]["plural"] == f"{kind.lower()}s"
        assert spec["scope"] == ("Cluster" if kind in PLATFORM_KINDS else "Namespaced")
        (version,) = spec["versions"]
        assert (version["name"], version["served"], version["storage"]) == ("v1", True, True)
        assert version["subresources"] == {"status": {}}
        assert "pincompute" in spec["names"]["categories"]


def _schema_at(schema: dict[str, Any], json_path: str) -> dict[str, Any] | None:
    """The schema node a simple printer-column JSONPath points at (None: no such field)."""
    plain = re.sub(r"\[[^\]]*\]", "", json_path)  # filters and indexes: into the items
    parts = [p.replace("\0", ".") for p in
             plain.lstrip(".").replace("\\.", "\0").split(".")]
    if parts[0] == "metadata":  # ObjectMeta: the API server's, not in our schema
        known = ("name", "namespace", "labels", "annotations", "creationTimestamp")
        return {"type": "string"} if parts[1] in known else None
    node: dict[str, Any] = schema
    for part in parts:
        if node.get("type") == "array":
            node = node["items"]
        if part not in (node.get("properties") or {}):
            return None
        node = node["properties"][part]
    return node


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_printer_columns_point_into_the_schema(kind: str) -> None:
    definition = crd(kind)
    schema = schema_of(kind)
    columns = definition["spec"]["versions"][0]["additionalPrinterColumns"]
    assert columns[-1] == {"name": "Age", "type": "date",
                           "jsonPath": ".metadata.creationTimestamp"}
    for column in columns:
        assert _schema_at(schema, column["jsonPath"]) is not None, column
    names = [c["name"] for c in columns]
    if kind not in PLATFORM_KINDS:
        assert names[0] == "Project"
        assert columns[0]["jsonPath"] == ".metadata.labels.pincompute\\.io/project"
    if kind in ("PinApp", "PinterestService", "PinPod", "PinterestJobSet",
                "PinterestTrainingJob", "PinterestCronJob", "PinterestDaemon"):
        assert names == ["Project", "Tier", "Ready", "Phase", "Age"]


def test_every_model_field_is_in_the_schema() -> None:
    for kind, model in KINDS.items():
        spec_model = model.model_fields["spec"].annotation
        props = schema_of(kind)["properties"]["spec"]["properties"]
        for name, field in spec_model.model_fields.items():  # type: ignore[union-attr]
            assert (field.alias or name) in props, (kind, name)


def test_status_schema() -> None:
    status = schema_of("PinApp")["properties"]["status"]["properties"]
    assert {"phase", "ready", "replicas", "readyReplicas", "observedRevision",
            "observedGeneration", "conditions", "clusters"} <= set(status)
    clusters = status["clusters"]
    assert clusters["x-kubernetes-list-type"] == "map"
    assert clusters["x-kubernetes-list-map-keys"] == ["name"]
    assert {"name", "phase", "readyReplicas", "observedRevision", "conditions"} <= set(
        clusters["items"]["properties"])
    condition = status["conditions"]["items"]
    assert condition["required"] == ["type", "status"]
    assert schema_of("PinScaler")["properties"]["status"]["properties"]["currentReplicas"]
    assert schema_of("Cluster")["properties"]["status"]["properties"]["phase"]["enum"] == [
        "Ready", "NotReady", "Cordoned", "Unknown"]


def test_the_project_note_is_in_namespaced_crds() -> None:
    for kind in ALL_KINDS:
        description = schema_of(kind)["description"]
        namespaced = kind not in PLATFORM_KINDS
        assert (PROJECT_LABEL in description) is namespaced, kind
        assert ("pincompute.io/project-from" in crd(kind)["metadata"]["annotations"]) is (
            namespaced)


def test_conversions() -> None:
    spec = openapi_schema("PinApp")["properties"]["spec"]["properties"]
    template = spec["template"]["properties"]
    resources = template["containers"]["items"]["properties"]["resources"]["properties"]
    # quantities are int-or-string with the quantity pattern, like Kubernetes' own
    assert resources["cpu"]["x-kubernetes-int-or-string"] is True
    assert resources["cpu"]["pattern"].startswith("^")
    # int | percent → int-or-string
    assert spec["rollout"]["properties"]["maxSurge"]["x-kubernetes-int-or-string"] is True
    # Optional[X] is just X (nulls are pruned), with the field's description
    assert spec["service"]["type"] == "object"
    # no defaults in the schema, but named in the description
    assert "Default: \"ondemand\"" in spec["tier"]["description"]
    # a discriminated union: one object, the alternatives kept as a oneOf
    metric = openapi_schema("PinScaler")["properties"]["spec"]["properties"]["metrics"]["items"]
    assert metric["properties"]["type"]["enum"] == ["cpu", "memory", "custom"]
    assert len(metric["oneOf"]) == 2
    # a mapping with fixed keys becomes properties
    capacity = openapi_schema("Cluster")["properties"]["spec"]["properties"]["capacity"]
    assert {"cpu", "memory", "nvidia.com/gpu"} <= set(capacity["properties"])


def test_structural_schema_of_odd_shapes() -> None:
    schema = structural_schema({
        "type": "object",
        "properties": {
            "anything": {},
            "free": {"type": "object", "additionalProperties": True},
            "mixed": {"anyOf": [{"type": "array", "items": {"type": "string"}},
                                {"const": "all", "type": "string"}]},
            "tagged": {"anyOf": [{"const": "a"}, {"enum": ["b", "c"]}, {"type": "null"}]},
            "bounded": {"type": "integer", "exclusiveMinimum": 0},
            "nested": {"anyOf": [{"anyOf": [{"type": "string"}, {"type": "number"}]},
                                 {"type": "null"}]},
            "lists": {"anyOf": [{"type": "array", "items": {"type": "string"}},
                                {"type": "array", "items": {"type": "integer"}}]},
        },
        "$defs": {},
    })
    props = schema["properties"]
    assert props["anything"] == {"x-kubernetes-preserve-unknown-fields": True}
    assert props["free"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert props["mixed"]["x-kubernetes-preserve-unknown-fields"] is True
    assert 'One of: a list; or "all".' in props["mixed"]["description"]
    assert props["tagged"] == {"type": "string", "enum": ["a", "b", "c"]}
    assert props["bounded"] == {"type": "integer", "minimum": 0, "exclusiveMinimum": True}
    assert props["nested"]["x-kubernetes-int-or-string"] is True
    assert props["lists"]["x-kubernetes-preserve-unknown-fields"] is True
    assert problems(schema) == []


# --- examples validate against their CRD --------------------------------------------------------

def _example_documents() -> list[tuple[str, dict[str, Any]]]:
    if not EXAMPLES.is_dir():
        return []
    loaded = load_tree(EXAMPLES)
    return [(f"{d.file}#{d.index}", json.loads(json.dumps(d.data))) for d in loaded.documents
            if d.kind in KINDS]


EXAMPLE_DOCS = _example_documents()


@pytest.mark.skipif(not EXAMPLE_DOCS, reason="no examples/ yet")
@pytest.mark.parametrize(("where", "document"), EXAMPLE_DOCS, ids=[w for w, _ in EXAMPLE_DOCS])
def test_examples_validate_against_their_crd(where: str, document: dict[str, Any]) -> None:
    resource = custom_resource(document)
    errors = sorted(validator(document["kind"]).iter_errors(resource), key=str)
    assert not errors, f"{where}: " + "; ".join(
        f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in errors)


def test_examples_cover_most_kinds() -> None:
    if not EXAMPLE_DOCS:
        pytest.skip("no examples/ yet")
    assert len({d["kind"] for _, d in EXAMPLE_DOCS}) >= 10


APP = {
    "apiVersion": "pincompute.io/v1", "kind": "PinApp",
    "metadata": {"name": "cart", "project": "shop", "labels": {"team": "shop"}},
    "spec": {"replicas": 2, "template": {"containers": [
        {"name": "main", "image": "registry.internal/shop/cart:1.0.0",
         "resources": {"cpu": "500m", "memory": "1Gi"}}]}},
}


def _with(path: str, value: Any, base: dict[str, Any] = APP) -> dict[str, Any]:
    doc = copy.deepcopy(base)
    node: Any = doc
    *parents, last = path.split(".")
    for part in parents:
        node = node[int(part)] if part.isdigit() else node[part]
    node[last] = value
    return custom_resource(doc)


def test_the_schema_accepts_a_valid_app_and_rejects_invalid_ones() -> None:
    check = validator("PinApp")
    assert not list(check.iter_errors(custom_resource(APP)))
    assert not list(check.iter_errors(_with("spec.template.containers.0.resources.cpu", 2)))
    for path, value in [
        ("spec.tier", "gold"),
        ("spec.replicas", -1),
        ("spec.replicas", "two"),
        ("metadata.name", "Cart_Service"),
        ("metadata.name", "x" * 53),
        ("spec.template.containers", []),
        ("spec.template.containers.0.resources.cpu", "lots"),
        ("spec.rollout", {"maxSurge": True}),
    ]:
        assert list(check.iter_errors(_with(path, value))), (path, value)


def test_the_metric_union_keeps_its_alternatives() -> None:
    scaler = {"apiVersion": "pincompute.io/v1", "kind": "PinScaler",
              "metadata": {"name": "cart", "project": "shop"},
              "spec": {"target": "cart", "maxReplicas": 4, "metrics": [
                  {"type": "cpu", "targetUtilization": 60},
                  {"type": "custom", "query": "sum(x)", "targetPerReplica": 100}]}}
    check = validator("PinScaler")
    assert not list(check.iter_errors(custom_resource(scaler)))
    for metric in ({"type": "custom", "targetUtilization": 60},   # custom needs a query
                   {"type": "cpu", "query": "x", "targetPerReplica": 1},  # cpu needs a target
                   {"type": "gpu", "targetUtilization": 60}):
        bad = copy.deepcopy(scaler)
        bad["spec"]["metrics"] = [metric]
        assert list(check.iter_errors(custom_resource(bad))), metric


def test_custom_resource() -> None:
    resource = custom_resource(APP, namespace="shop-prod")
    assert "project" not in resource["metadata"]
    assert resource["metadata"]["labels"] == {"team": "shop", PROJECT_LABEL: "shop"}
    assert resource["metadata"]["namespace"] == "shop-prod"
    assert custom_resource(APP)["metadata"]["namespace"] == "shop"
    assert APP["metadata"]["project"] == "shop"  # the input is not changed
    cluster = {"apiVersion": "pincompute.io/v1", "kind": "Cluster",
               "metadata": {"name": "east-a"}, "spec": {"region": "r", "zone": "z"}}
    assert custom_resource(cluster) == cluster


# --- the command ----------------------------------------------------------------------------------

def test_crds_command_prints_every_crd() -> None:
    from ruamel.yaml import YAML

    result = CliRunner().invoke(cli, ["crds"])
    assert result.exit_code == 0, result.output
    documents = list(YAML(typ="safe").load_all(result.output))
    assert [d["spec"]["names"]["kind"] for d in documents] == ALL_KINDS
    assert documents == all_crds()
    assert result.output == to_yaml(all_crds())  # deterministic
    assert "&id" not in result.output  # no YAML anchors


def test_crds_command_writes_a_directory(tmp_path: Path) -> None:
    out = tmp_path / "crds"
    out.mkdir()
    (out / f"stale.{GROUP}.yaml").write_text("old")
    (out / "kustomization.yaml").write_text("keep me")
    result = CliRunner().invoke(cli, ["crds", "--out-dir", str(out)])
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted([f"{k.lower()}s.{GROUP}.yaml" for k in ALL_KINDS]
                           + ["kustomization.yaml"])
    assert (out / f"pinapps.{GROUP}.yaml").read_text() == to_yaml([crd("PinApp")])


def test_crds_command_kind_filter() -> None:
    result = CliRunner().invoke(cli, ["crds", "--kind", "PinApp", "--kind", "PinScaler"])
    assert result.exit_code == 0
    assert result.output.count("kind: CustomResourceDefinition") == 2
    bad = CliRunner().invoke(cli, ["crds", "--kind", "Pinapp"])
    assert bad.exit_code == 2


def test_crds_help_teaches() -> None:
    result = CliRunner().invoke(cli, ["crds", "--help"])
    assert "kubectl --context host apply --server-side -f -" in result.output
