"""The checked-in JSON Schemas are generated from the models and must not go stale."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from pincompile.schemas import ALL_SCHEMA, render_all
from pincompile.source.loader import load_tree

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "schemas"


def test_checked_in_schemas_match_the_models() -> None:
    rendered = render_all()
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in SCHEMAS.glob("*.json")}
    stale = sorted(n for n in rendered if on_disk.get(n) != rendered[n])
    extra = sorted(set(on_disk) - set(rendered))
    assert not stale and not extra, (
        f"schemas/ is stale (changed: {stale}, unexpected: {extra}); "
        "regenerate with: pincompile schema --out-dir schemas")


def _validator() -> Draft202012Validator:
    registry: Registry = Registry()
    for text in render_all().values():
        schema = json.loads(text)
        Draft202012Validator.check_schema(schema)
        registry = registry.with_resource(schema["$id"], Resource.from_contents(schema))
    return Draft202012Validator(json.loads(render_all()[ALL_SCHEMA]), registry=registry)


def test_every_example_document_satisfies_the_combined_schema() -> None:
    validator = _validator()
    loaded = load_tree(ROOT / "examples")
    docs = [d for d in loaded.documents if isinstance(d.data, dict) and "kind" in d.data]
    assert docs, "examples/ should contain specs"
    for doc in docs:
        data = json.loads(json.dumps(doc.data, default=str))
        errors = [e.message for e in validator.iter_errors(data)]
        assert not errors, f"{doc.file}: {errors}"


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ({"apiVersion": "pincompute.io/v1", "kind": "PinApp",
          "metadata": {"name": "a", "project": "p"},
          "spec": {"template": {"containers": [{"name": "m", "image": "r/x:1", "imgae": 1}]}}},
         "Additional properties are not allowed ('imgae' was unexpected)"),
        ({"apiVersion": "pincompute.io/v1", "kind": "PinApp",
          "metadata": {"name": "a", "project": "p"},
          "spec": {"tier": "gold", "template": {"containers": [{"name": "m", "image": "r/x:1"}]}}},
         "'gold' is not one of ['reserved', 'ondemand', 'preemptible']"),
    ],
)
def test_editors_see_the_same_mistakes_the_validator_reports(doc: dict, expected: str) -> None:
    messages = [e.message for e in _validator().iter_errors(doc)]
    assert expected in messages


def test_schemas_are_the_same_when_the_models_validated_documents_first() -> None:
    """Descriptions are attached on first render (not at import); models already built for
    validation are rebuilt with them, nested models included."""
    import subprocess
    import sys

    code = ("import json; from pincompile.models import KINDS; from pincompile.parse import "
            "parse_document; from pincompile.source.loader import load_text\n"
            "from pathlib import Path\n"
            "for p in sorted(Path('examples').rglob('*.yaml')):\n"
            "    for d in load_text(p.name, p.read_bytes()).documents: parse_document(d)\n"
            "from pincompile.schemas import render_all; print(json.dumps(render_all()))")
    root = SCHEMAS.parent
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                          text=True, check=True)
    assert json.loads(done.stdout) == render_all()
    assert '"description"' in render_all()["PinApp.json"]
