"""A pydantic JSON Schema as a Kubernetes *structural* schema: every ``$ref`` inlined, a
``type`` on every node, unions only in the forms the API server accepts, no defaults (they
are named in the descriptions instead)."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

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


class Converter:
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
    return Converter(schema.get("$defs") or {}).convert(
        {k: v for k, v in schema.items() if k != "$defs"})
