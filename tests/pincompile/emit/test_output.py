"""Serialization and the atomic output tree."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from pincompile.emit.output import (
    MARKER,
    OutputError,
    render_stream,
    to_json,
    to_yaml,
    write_tree,
)
from pincompile.manifest import Manifest
from tests.support.expand import siblings_left

OBJ = {"kind": "ConfigMap", "apiVersion": "v1",
       "metadata": {"name": "x", "namespace": "ns", "labels": {"b": "true", "a": "1"}},
       "data": {"app.yaml": "a: 1\nb: [2]\n", "on": "yes", "n": "0755", "empty": ""}}


def test_yaml_is_canonical_and_round_trips() -> None:
    text = to_yaml(OBJ)
    assert text.startswith("apiVersion: v1\ndata:\n")
    assert "  app.yaml: |\n    a: 1\n    b: [2]\n" in text
    assert yaml.safe_load(text) == OBJ
    shared = {"k": "v"}
    assert "&" not in to_yaml({"a": shared, "b": shared})
    assert to_yaml(dict(reversed(list(OBJ.items())))) == text
    long = "x" * 500
    assert to_yaml({"a": long}) == f"a: {long}\n"
    assert to_yaml({"l": [{"a": 1, "b": [2]}, []]}) == "l:\n- a: 1\n  b:\n  - 2\n- []\n"


def test_json_is_sorted() -> None:
    assert to_json({"b": 1, "a": "é"}) == '{\n  "a": "é",\n  "b": 1\n}\n'


def test_stream_orders_by_path() -> None:
    ms = [Manifest("c2", OBJ), Manifest("c1", OBJ)]
    text = render_stream(ms, "yaml")
    assert text.index("# c1/ns/configmap-x.yaml") < text.index("# c2/ns/configmap-x.yaml")
    assert list(yaml.safe_load_all(text)) == [OBJ, OBJ]


def test_write_tree_replaces_only_its_own(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_tree(out, {"a/b.yaml": "x: 1\n", "placement.json": "{}\n"})
    assert (out / MARKER).is_file() and (out / "a/b.yaml").read_text() == "x: 1\n"
    write_tree(out, {"c.yaml": "y: 2\n"})
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == [
        MARKER, "c.yaml"]
    assert siblings_left(out) == [] and [p.name for p in tmp_path.iterdir()] == ["out"]
    (out / MARKER).unlink()
    with pytest.raises(OutputError, match="refusing"):
        write_tree(out, {"d.yaml": ""})
    assert (out / "c.yaml").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    write_tree(empty, {"e.yaml": ""})
    assert (empty / "e.yaml").exists()


_scalars = (st.none() | st.booleans() | st.integers(min_value=-2**63, max_value=2**63)
            | st.text() | st.sampled_from([
                "yes", "No", "on", "OFF", "y", "~", "null", "NULL", "true", "1e3", "0x1f",
                "0o14", "1_000", "1:20", "2001-12-14", ".inf", "-.nan", "<<", "=", "- a",
                "a: b", "a #b", "#c", "x:", " lead", "trail ", "\tx", "a\n", "a\n\n", "\n a",
                "|", ">", "'q'", '"q"', "@x", "`x`", "%x", "&a", "*a", "!t", "?", "é\u2028",
                "\x85", "\ufeff", "😀", "a\r\nb", "line\n  indented\n", "  ", ""]))
_keys = st.text(min_size=1) | st.sampled_from(["app.kubernetes.io/name", "yes", "1", "a b"])
_data = st.recursive(_scalars, lambda children: st.lists(children, max_size=4)
                     | st.dictionaries(_keys, children, max_size=4), max_leaves=20)


@settings(max_examples=400, deadline=None)
@given(_data)
def test_yaml_round_trips(value: object) -> None:
    assert yaml.safe_load(to_yaml(value)) == value
