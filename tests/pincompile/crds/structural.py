"""A checker for the Kubernetes *structural schema* rules that matter for our CRDs.

Mirrors the rules apiextensions-apiserver enforces for ``apiextensions.k8s.io/v1``
(https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#specifying-a-structural-schema):

1. every node (properties, items, additionalProperties) has a non-empty ``type``, unless it
   sets ``x-kubernetes-int-or-string`` or ``x-kubernetes-preserve-unknown-fields``;
2. inside ``allOf``/``anyOf``/``oneOf``/``not`` nothing structural (type, description,
   default, additionalProperties, nullable, x-kubernetes-*), except the int-or-string form
   ``anyOf: [{type: integer}, {type: string}]``, and every field they mention is also
   specified outside them;
3. ``metadata`` may only constrain ``name`` and ``generateName``;
4. and what v1 CRDs refuse outright: ``$ref``, ``definitions``, ``uniqueItems: true``,
   ``additionalProperties: false``, properties together with additionalProperties, fields
   that are not JSONSchemaProps, patterns Go's RE2 cannot compile.

Our own policy on top: no ``default`` anywhere (the stored object is what is in git).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

#: The fields of apiextensions v1 JSONSchemaProps.
PROPS = frozenset({
    "id", "$schema", "$ref", "description", "type", "format", "title", "default", "maximum",
    "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern",
    "maxItems", "minItems", "uniqueItems", "multipleOf", "enum", "maxProperties",
    "minProperties", "required", "items", "allOf", "oneOf", "anyOf", "not", "properties",
    "additionalProperties", "patternProperties", "dependencies", "additionalItems",
    "definitions", "externalDocs", "example", "nullable", "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource", "x-kubernetes-int-or-string", "x-kubernetes-list-map-keys",
    "x-kubernetes-list-type", "x-kubernetes-map-type", "x-kubernetes-validations",
})
#: Accepted by JSONSchemaProps but refused in v1 CRDs (or noise we promise not to emit).
FORBIDDEN = frozenset({"$ref", "$schema", "id", "definitions", "patternProperties",
                       "dependencies", "additionalItems", "title", "default"})
TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean"})
JUNCTORS = ("allOf", "anyOf", "oneOf", "not")
NOT_IN_JUNCTORS = frozenset({
    "type", "description", "default", "additionalProperties", "nullable", "title",
    "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string", "x-kubernetes-list-map-keys", "x-kubernetes-list-type",
    "x-kubernetes-map-type", "x-kubernetes-validations",
})
INT_OR_STRING = [{"type": "integer"}, {"type": "string"}]
_NOT_RE2 = re.compile(r"\(\?<?[=!]|\\[1-9]")  # lookaround, backreferences
_PY_TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool}


def problems(schema: Mapping[str, Any]) -> list[str]:
    """Every structural-schema violation in an ``openAPIV3Schema``, as ``path: what``."""
    out: list[str] = []
    _node(schema, "", out, root=True)
    return out


def _node(node: Any, path: str, out: list[str], *, root: bool = False) -> None:
    where = path or "<root>"
    if not isinstance(node, Mapping):
        out.append(f"{where}: a schema must be a mapping")
        return
    for key in node:
        if key not in PROPS:
            out.append(f"{where}: '{key}' is not a JSONSchemaProps field")
        elif key in FORBIDDEN:
            out.append(f"{where}: '{key}' is not allowed")
    int_or_string = node.get("x-kubernetes-int-or-string") is True
    preserve = node.get("x-kubernetes-preserve-unknown-fields") is True
    kind = node.get("type")
    if kind is None and not (int_or_string or preserve):
        out.append(f"{where}: no type (and not int-or-string or preserve-unknown-fields)")
    if kind is not None and kind not in TYPES:
        out.append(f"{where}: unknown type {kind!r}")
    if int_or_string and kind is not None:
        out.append(f"{where}: x-kubernetes-int-or-string with a type")
    if int_or_string and "anyOf" in node and node["anyOf"] != INT_OR_STRING:
        out.append(f"{where}: int-or-string anyOf must be exactly {INT_OR_STRING}")
    if node.get("uniqueItems") is True:
        out.append(f"{where}: uniqueItems: true is not allowed")
    extra = node.get("additionalProperties")
    if extra is False:
        out.append(f"{where}: additionalProperties: false is not allowed")
    if "properties" in node and isinstance(extra, Mapping):
        out.append(f"{where}: properties and additionalProperties are mutually exclusive")
    if extra is True:
        out.append(f"{where}: additionalProperties: true (use preserve-unknown-fields)")
    for key in ("exclusiveMinimum", "exclusiveMaximum"):
        if key in node and not isinstance(node[key], bool):
            out.append(f"{where}: {key} must be a boolean in OpenAPI v3.0")
    if kind == "array" and not isinstance(node.get("items"), Mapping):
        out.append(f"{where}: an array needs items (one schema)")
    if "items" in node and kind != "array":
        out.append(f"{where}: items on a non-array")
    if "properties" in node and kind != "object":
        out.append(f"{where}: properties on a non-object")
    if "enum" in node and kind in _PY_TYPES:
        for value in node["enum"]:
            if not isinstance(value, _PY_TYPES[kind]) or (
                    kind != "boolean" and isinstance(value, bool)):
                out.append(f"{where}: enum value {value!r} is not a {kind}")
    if "pattern" in node:
        try:
            re.compile(node["pattern"])
        except re.error as exc:
            out.append(f"{where}: pattern does not compile: {exc}")
        if _NOT_RE2.search(node["pattern"]):
            out.append(f"{where}: pattern uses lookaround or backreferences (not RE2)")
    props = node.get("properties") or {}
    for name in node.get("required") or ():
        if name not in props:
            out.append(f"{where}: required field '{name}' has no schema")
    if node.get("x-kubernetes-list-type") == "map":
        items = node.get("items") or {}
        keys = node.get("x-kubernetes-list-map-keys") or []
        if not keys:
            out.append(f"{where}: a map list needs x-kubernetes-list-map-keys")
        for key in keys:
            key_schema = (items.get("properties") or {}).get(key) or {}
            if key not in (items.get("required") or ()):
                out.append(f"{where}: map-list key '{key}' must be required")
            if key_schema.get("type") not in ("string", "integer", "boolean"):
                out.append(f"{where}: map-list key '{key}' must be a scalar")

    for name, child in props.items():
        if root and name == "metadata":
            _metadata(child, f"{path}.metadata", out)
        else:
            _node(child, f"{path}.{name}", out)
    if isinstance(node.get("items"), Mapping):
        _node(node["items"], f"{path}[]", out)
    if isinstance(extra, Mapping):
        _node(extra, f"{path}{{*}}", out)
    for junctor in JUNCTORS:
        if junctor not in node:
            continue
        branches = [node[junctor]] if junctor == "not" else node[junctor]
        for i, branch in enumerate(branches):
            if int_or_string and junctor == "anyOf":
                continue  # the allowed int-or-string form, checked above
            _junctor(branch, node, f"{path}.{junctor}[{i}]", out)


def _junctor(branch: Any, outer: Mapping[str, Any], path: str, out: list[str]) -> None:
    """Value validations only, on fields that are specified outside the junctor."""
    if not isinstance(branch, Mapping):
        out.append(f"{path}: a schema must be a mapping")
        return
    for key in branch:
        if key in NOT_IN_JUNCTORS:
            out.append(f"{path}: '{key}' is not allowed inside a junctor")
        elif key not in PROPS or key in FORBIDDEN:
            out.append(f"{path}: '{key}' is not allowed")
    outer_props = outer.get("properties") or {}
    for name in branch.get("required") or ():
        if name not in outer_props:
            out.append(f"{path}: requires '{name}', which is not specified outside")
    for name, child in (branch.get("properties") or {}).items():
        if name not in outer_props:
            out.append(f"{path}: property '{name}' is not specified outside the junctor")
        else:
            _junctor(child, outer_props[name], f"{path}.{name}", out)
    if "items" in branch:
        if not isinstance(outer.get("items"), Mapping):
            out.append(f"{path}: items not specified outside the junctor")
        else:
            _junctor(branch["items"], outer["items"], f"{path}[]", out)
    for junctor in JUNCTORS:
        if junctor in branch:
            nested = [branch[junctor]] if junctor == "not" else branch[junctor]
            for i, b in enumerate(nested):
                _junctor(b, outer, f"{path}.{junctor}[{i}]", out)


def _metadata(node: Any, path: str, out: list[str]) -> None:
    if not isinstance(node, Mapping) or node.get("type") != "object":
        out.append(f"{path}: metadata must be {{type: object}}")
        return
    for key in node:
        if key not in ("type", "properties", "description"):
            out.append(f"{path}: '{key}' is not allowed on metadata")
    for name, child in (node.get("properties") or {}).items():
        if name not in ("name", "generateName"):
            out.append(f"{path}: only name and generateName may be constrained, not '{name}'")
        elif child.get("type") != "string":
            out.append(f"{path}.{name}: must be a string")
        else:
            _node(child, f"{path}.{name}", out)
