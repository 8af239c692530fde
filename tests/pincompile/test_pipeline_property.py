"""Whatever the input — random text, random bytes, valid specs with parts dropped, retyped
or added — validation ends in located diagnostics, never in an exception or a traceback."""

from __future__ import annotations

import copy
import io
import json
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from pincompile.cli import cli
from pincompile.diagnostics import Diagnostic
from pincompile.models import KINDS
from pincompile.source.loader import load_text
from tests.support.specs import compile_all, files, load, write_tree

SETTINGS = settings(max_examples=200, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
TARGET = "apps/fuzz.yaml"


@cache
def _field_names() -> tuple[str, ...]:
    """Every field name of every kind (camelCase), so added keys are often real fields."""
    names: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            names.update(k for k in node.get("properties", {}) if isinstance(k, str))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for model in KINDS.values():
        walk(model.model_json_schema(by_alias=True))
    return tuple(sorted(names))


@cache
def _fixture_documents() -> tuple[dict[str, Any], ...]:
    """The fixture's documents as plain data."""
    return tuple(json.loads(json.dumps(d.data)) for d in load(files()).documents)


INTERESTING = st.sampled_from([
    "", "0", "0%", "25%", "-1", "1e3", "500m", "4Gi", "1.5Ti", "30s", "1h30m", "all", "none",
    "host", "hostPath", "daemon", "opt-in", "web", "shop", "infra", "logging", "traffic",
    "node-agent", "east-a-01", "us-east-1", "us-east-1a", "A10G", "master", "worker",
    "registry.internal/app:1.0", "registry.internal/app:latest", "*/5 * * * *", "Etc/UTC",
    "{{ app.name }}", "{{ app.__class__ }}", "{% for x in y %}", "http", "proxy",
    "/etc/pincompute/config", "PINCOMPUTE_PROJECT", "~", "null", "yes", "1.30",
])
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-2**70, max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20), INTERESTING)
KEYS = st.one_of(st.sampled_from(_field_names()), st.text(min_size=1, max_size=12))
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(KEYS, inner, max_size=4)),
    max_leaves=12)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


def _parent(data: Any, path: tuple[Any, ...]) -> Any:
    for part in path[:-1]:
        data = data[part]
    return data


@st.composite
def mutated_documents(draw: st.DrawFn) -> dict[str, Any]:
    """A fixture document with one to four mutations: a key dropped, a value replaced by
    anything, a key (often a real field name) added, a list item duplicated."""
    data = copy.deepcopy(draw(st.sampled_from(_fixture_documents())))
    for _ in range(draw(st.integers(1, 4))):
        paths = [p for p in _paths(data) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = _parent(data, path)
        action = draw(st.sampled_from(["drop", "replace", "add", "duplicate"]))
        if action == "drop":
            del parent[path[-1]]
        elif action == "replace":
            parent[path[-1]] = draw(VALUES)
        elif action == "add":
            target = parent[path[-1]]
            if isinstance(target, dict):
                target[draw(KEYS)] = draw(VALUES)
            elif isinstance(target, list):
                target.append(draw(VALUES))
            else:
                parent[path[-1]] = {draw(KEYS): draw(VALUES)}
        elif isinstance(parent, list):
            parent.append(copy.deepcopy(parent[path[-1]]))
    return data


def _dump(data: Any, flow: bool) -> str:
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = flow
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


@st.composite
def yaml_texts(draw: st.DrawFn) -> str:
    """Spec-like YAML text: a mutated fixture document or a random spec-shaped mapping."""
    if draw(st.booleans()):
        data: Any = draw(mutated_documents())
    else:
        data = {"apiVersion": "pincompute.io/v1", "kind": draw(st.sampled_from(list(KINDS))),
                "metadata": draw(st.dictionaries(KEYS, VALUES, max_size=3)),
                "spec": draw(VALUES)}
    return _dump(data, draw(st.booleans()))


@st.composite
def mangled_bytes(draw: st.DrawFn) -> bytes:
    """A fixture file with random bytes inserted, deleted or replaced."""
    raw = bytearray(draw(st.sampled_from(sorted(files().values()))).encode())  # type: ignore[union-attr]
    for _ in range(draw(st.integers(1, 8))):
        at = draw(st.integers(0, len(raw)))
        action = draw(st.sampled_from(["insert", "delete", "replace"]))
        blob = draw(st.binary(min_size=1, max_size=4))
        if action == "insert":
            raw[at:at] = blob
        elif action == "delete":
            del raw[at:at + len(blob)]
        else:
            raw[at:at + len(blob)] = blob
    return bytes(raw)


INPUTS = st.one_of(
    st.text(max_size=300),
    st.binary(max_size=300),
    yaml_texts(),
    mangled_bytes(),
    st.text(alphabet=":-[]{}&*!|>'\"#%@` \n\tab01", max_size=200),
)


def _assert_clean(diagnostics: list[Diagnostic], names: set[str]) -> None:
    for d in diagnostics:
        assert isinstance(d, Diagnostic)
        assert d.file in names and d.line >= 1 and d.column >= 1, d
        assert d.code and d.message, d


@SETTINGS
@given(content=INPUTS)
def test_any_input_gives_diagnostics_not_exceptions(content: str | bytes) -> None:
    load_text(TARGET, content)  # the loader alone never raises
    contents = files({TARGET: content})
    result = compile_all(contents)
    _assert_clean(result.diagnostics, set(contents))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(content=st.one_of(yaml_texts(), mangled_bytes()))
def test_the_cli_never_prints_a_traceback(content: str | bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = write_tree(Path(tmp), files({TARGET: content}))
        result = CliRunner().invoke(cli, ["validate", str(root)])
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        result.exception)
    assert result.exit_code in (0, 1), result.output
    assert "Traceback" not in result.output
