"""JSON Schemas (draft 2020-12) generated from the models, for editors and CI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pincompile.models import API_VERSION, KINDS
from pincompile.models.docs import describe_fields

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_BASE = "https://pincompute.io/schemas/v1/"
ALL_SCHEMA = "pincompute.json"


def kind_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema of one kind, with descriptions from the model docstrings."""
    describe_fields()
    model = KINDS[kind]
    schema = model.model_json_schema(by_alias=True, mode="validation")
    return {
        "$schema": SCHEMA_DIALECT,
        "$id": f"{SCHEMA_BASE}{kind}.json",
        "title": kind,
        "description": (model.__doc__ or kind).strip().splitlines()[0],
        **{k: v for k, v in schema.items() if k not in ("title", "description")},
    }


def combined_schema() -> dict[str, Any]:
    """One schema for any pincompute.io document, dispatching on ``kind``."""
    return {
        "$schema": SCHEMA_DIALECT,
        "$id": f"{SCHEMA_BASE}{ALL_SCHEMA}",
        "title": "pincompute.io document",
        "description": f"Any {API_VERSION} document; the kind decides the schema.",
        "type": "object",
        "required": ["apiVersion", "kind"],
        "properties": {"apiVersion": {"const": API_VERSION}, "kind": {"enum": list(KINDS)}},
        "allOf": [
            {"if": {"properties": {"kind": {"const": kind}}, "required": ["kind"]},
             "then": {"$ref": f"{kind}.json"}}
            for kind in KINDS
        ],
    }


def render_all() -> dict[str, str]:
    """File name → JSON text for every schema file."""
    files = {f"{kind}.json": kind_schema(kind) for kind in KINDS}
    files[ALL_SCHEMA] = combined_schema()
    return {name: json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
            for name, schema in files.items()}


def write_all(directory: Path) -> list[Path]:
    """Write every schema into ``directory``; remove stale ``*.json`` files it owns."""
    directory.mkdir(parents=True, exist_ok=True)
    rendered = render_all()
    for old in directory.glob("*.json"):
        if old.name not in rendered:
            old.unlink()
    written = []
    for name, text in rendered.items():
        path = directory / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
