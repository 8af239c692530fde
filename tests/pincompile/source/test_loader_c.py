"""The libyaml loader against the reference (ruamel.yaml): the same values, the same types,
the same positions, over generated YAML in every style; and what only the fast loader adds
(regular files only)."""

from __future__ import annotations

import datetime
import os
import pickle
import socket
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from ruamel.yaml.comments import TaggedScalar

from pincompile.source import loader_c, loader_ruamel
from pincompile.source.loader import load_text, load_tree
from pincompile.source.positioned import Document, YamlMap, YamlSeq
from tests.support.specs import doc, triples

SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

#: Scalars whose meaning differs between YAML 1.1 and 1.2 or between readers.
TRICKY = ["yes", "no", "on", "off", "y", "n", "Yes", "ON", "true", "False", "TRUE", "null",
          "Null", "~", "", "0755", "0o755", "0x1F", "0b101", "1e3", "1E3", "1.5e-3", ".5",
          "-.inf", ".NaN", "+12", "-0", "1_000", "12:30", "12:30:00", "2024-01-01",
          "2024-01-01T10:00:00Z", "2024-01-01 10:00:00.5 +01:00", "0.0", "007", "1.",
          "café", "naïve ☃", "registry.internal/app:1.0", "500m", "25%", "*/5 * * * *",
          "a: b", "- x", "#hash", "a #b", "{x}", "[y]", "'q'", '"dq"', "tab\there", "@at",
          "`tick", "%pct", "!bang", "&amp", "multi\nline", "trailing\n", " lead", "end "]
PLAIN_KEYS = ["apiVersion", "kind", "name", "spec", "a", "b-c", "d_e", "x.y", "1", "2.5",
              "true", "null", "on", "key with spaces", "ünï"]


def _plain_ok(text: str) -> bool:
    """Whether ``text`` can be written as a plain scalar and still be one scalar."""
    return bool(text) and text == text.strip() and "\n" not in text and not any(
        s in text for s in (": ", " #", "\t")) and text[0] not in "-?:,[]{}#&*!|>'\"%@`" \
        and not text.endswith(":")


def _scalar(value: str, style: str) -> str:
    if style == "plain" and _plain_ok(value):
        return value
    if style == "single" and "\n" not in value:
        return "'" + value.replace("'", "''") + "'"
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace(
        "\t", "\\t")
    return f'"{escaped}"'


Tree = Any  # ("map", [(key, style, Tree)]) | ("seq", [Tree]) | ("scalar", text, style)

scalars = st.tuples(st.just("scalar"), st.sampled_from(TRICKY) | st.text(
    st.characters(blacklist_categories=["Cs", "Cc"]), max_size=8),
    st.sampled_from(["plain", "plain", "plain", "single", "double", "block"]))
keys = st.sampled_from(PLAIN_KEYS) | st.from_regex(r"[a-z][a-zA-Z0-9]{0,6}", fullmatch=True)


def _trees(children: st.SearchStrategy[Tree]) -> st.SearchStrategy[Tree]:
    return (st.tuples(st.just("map"), st.lists(
                st.tuples(keys, st.sampled_from(["plain", "single", "double"]), children),
                max_size=4, unique_by=lambda kv: kv[0]), st.booleans())
            | st.tuples(st.just("seq"), st.lists(children, max_size=4), st.booleans()))


trees = st.recursive(scalars, _trees, max_leaves=25)


def _emit_flow(tree: Tree) -> str:
    if tree[0] == "scalar":
        style = "double" if tree[2] == "block" else tree[2]
        text = _scalar(tree[1], style)
        # libyaml (YAML 1.1) ends a plain scalar in flow context at ':' where YAML 1.2
        # reads on ('0:?'): such a file is left to the reference loader, not ordinary YAML
        return text if style != "plain" or not any(c in text for c in ",[]{}:") else _scalar(
            tree[1], "double")
    if tree[0] == "seq":
        return "[" + ", ".join(_emit_flow(t) for t in tree[1]) + "]"
    return "{" + ", ".join(f"{_scalar(k, ks) if _plain_ok(k) or ks != 'plain' else repr(k)}: "
                           f"{_emit_flow(v)}" for k, ks, v in tree[1]) + "}"


def _emit_block(tree: Tree, indent: int) -> list[str]:
    """Lines of a block node (for a map/seq: one line per entry, at ``indent``)."""
    pad = " " * indent
    out: list[str] = []
    if tree[0] == "map":
        for key, kstyle, value in tree[1]:
            k = _scalar(key, kstyle)
            out.extend(_entry(f"{pad}{k}:", value, indent + 2))
    else:
        for value in tree[1]:
            out.extend(_entry(f"{pad}-", value, indent + 2))
    return out


def _entry(head: str, value: Tree, indent: int) -> list[str]:
    if value[0] == "scalar":
        if value[2] == "block" and value[1].strip() and "\t" not in value[1] and (
                value[1].isprintable() or "\n" in value[1]) and not value[1][0].isspace():
            body = value[1].rstrip("\n")
            chomp = "" if value[1].endswith("\n") and not value[1].endswith("\n\n") else "-"
            if value[1].endswith("\n\n") or any(not line.isprintable() for line in
                                                body.split("\n")):
                return [f"{head} {_emit_flow(value)}"]
            return [f"{head} |{chomp}", *(" " * indent + line if line else ""
                                           for line in body.split("\n"))]
        return [f"{head} {_emit_flow(value)}"]
    if not value[1] or value[2]:  # empty or flow
        return [f"{head} {_emit_flow(value)}"]
    return [head, *_emit_block(value, indent)]


def emit(tree: Tree) -> str:
    if tree[0] == "scalar" or not tree[1] or tree[2]:
        return _emit_flow(tree) + "\n"
    return "\n".join(_emit_block(tree, 0)) + "\n"


def _anchored(value: Any) -> bool:
    """ruamel keeps an anchored scalar as its own type (PlainScalarString, ...)."""
    return getattr(getattr(value, "anchor", None), "value", None) is not None


def _same(fast: Any, ref: Any, where: str) -> None:
    assert type(fast) is type(ref) or _anchored(ref), f"{where}: {type(fast)} vs {type(ref)}"
    if isinstance(ref, YamlMap):
        assert list(fast) == list(ref), where
        assert (fast.line, fast.col) == (ref.line, ref.col), where
        assert fast.pos == ref.pos, where
        for k in ref:
            _same(fast[k], ref[k], f"{where}.{k}")
    elif isinstance(ref, YamlSeq):
        assert len(fast) == len(ref), where
        assert (fast.line, fast.col, fast.pos) == (ref.line, ref.col, ref.pos), where
        for i, (a, b) in enumerate(zip(fast, ref, strict=True)):
            _same(a, b, f"{where}[{i}]")
    elif isinstance(ref, float) and ref != ref:
        assert fast != fast, where  # NaN
    else:
        assert fast == ref, where


def _tagged(data: Any) -> bool:
    """Whether the reference loader read a scalar of ``data`` as a tagged (unusual) value."""
    if isinstance(data, dict):
        return any(_tagged(k) or _tagged(v) for k, v in data.items())
    if isinstance(data, list):
        return any(_tagged(v) for v in data)
    return isinstance(data, TaggedScalar)


def _compare(text: str, *, strict: bool = True) -> list[Document]:
    """Both loaders on ``text``. When the fast one defers, the reference's result is used
    as it is; ``strict``: it defers only when the reference finds a problem or the text has
    what it always defers (tabs, directives, odd characters)."""
    ref_docs, problem, _ = loader_ruamel.load_documents("t.yaml", text)
    try:
        fast_docs = loader_c.load_documents("t.yaml", text, loader_ruamel.MAX_EXPANDED_NODES)
    except loader_c.Unusual:
        # the fast loader may hand any file to the reference loader, but must not do so
        # for ordinary YAML: only when the reference itself finds a problem, or reads a
        # scalar as something other than plain data (a bare '=' is the YAML 1.1 value key)
        assert not strict or problem is not None or loader_c.unusual_text(text) or any(
            _tagged(d.data) for d in ref_docs), text
        return ref_docs
    assert problem is None, (text, problem)
    assert [(d.index, d.line, d.column) for d in fast_docs] == [
        (d.index, d.line, d.column) for d in ref_docs]
    for fast, ref in zip(fast_docs, ref_docs, strict=True):
        _same(fast.data, ref.data, "doc")
    return fast_docs


@SETTINGS
@given(st.lists(trees, min_size=1, max_size=3), st.sampled_from(["", "---\n", "# c\n---\n"]))
@example([("scalar", "=", "plain")], "")  # YAML 1.1's value key: deferred, as ruamel tags it
def test_fast_loader_agrees_with_reference_on_values_and_positions(
        documents: list[Tree], head: str) -> None:
    text = head + "---\n".join(emit(t) for t in documents)
    _compare(text)


@SETTINGS
@given(st.text(st.sampled_from(list("ab: -[]{},'\"#&*!|>\n\t01yn.~")), max_size=40))
def test_fast_loader_agrees_with_reference_on_odd_text(text: str) -> None:
    _compare(text, strict=False)  # libyaml refuses some text ruamel reads (":")


def test_scalars_mean_what_they_meant() -> None:
    text = doc("""
        a: yes
        b: on
        c: 0755
        d: 1e3
        e: 0o17
        f: 2024-01-01
        g: ~
        h: "0755"
        i: 0x1F
        """)
    data = _compare(text)[0].data
    assert data == {"a": "yes", "b": "on", "c": 755, "d": 1000.0, "e": 15,
                    "f": datetime.date(2024, 1, 1), "g": None, "h": "0755", "i": 31}


def test_anchors_and_aliases_are_shared_and_positioned() -> None:
    text = "base: &b {cpu: '1', mem: 2Gi}\nuse: *b\nlist: [*b, *b]\n"
    data = _compare(text)[0].data
    assert data["use"] is data["base"] and data["list"][1] is data["base"]


def test_unusual_files_go_to_the_reference_loader() -> None:
    for text in ("a: 1\na: 2\n", "%YAML 1.1\n---\na: yes\n", "a: !x 1\n", "<<: {a: 1}\n",
                 "? [a]\n: 1\n", "a: [\n", "a: \u2028\n", "a: =\n"):
        with pytest.raises(loader_c.Unusual):
            loader_c.load_documents("t.yaml", text, 1000)
    assert load_text("v.yaml", "%YAML 1.1\n---\na: yes\n").documents[0].data == {"a": True}


def test_positioned_data_pickles() -> None:
    data = loader_c.load_documents("p.yaml", "a: {b: [1, {c: d}]}\n", 1000)[0].data
    back = pickle.loads(pickle.dumps(data))
    assert back == data and back.pos == data.pos and back["a"]["b"].pos == data["a"]["b"].pos


def _paths(data: Any, prefix: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """Every path into ``data`` (and one past its end in each container)."""
    found = [prefix]
    if isinstance(data, dict):
        found.append((*prefix, "no-such-key"))
        for key, value in data.items():
            found.extend(_paths(value, (*prefix, key)))
    elif isinstance(data, list):
        found.append((*prefix, len(data)))
        for i, value in enumerate(data):
            found.extend(_paths(value, (*prefix, i)))
    return found


@SETTINGS
@given(st.lists(trees, min_size=1, max_size=3))
def test_documents_without_positions_locate_as_positioned_ones(documents: list[Tree]) -> None:
    """A compile loads plain data; every location it reports is the positioned loader's,
    also after the documents went through a pickle (another process, the cache)."""
    text = "---\n".join(emit(t) for t in documents)
    try:
        positioned = loader_c.load_documents("t.yaml", text, 1000)
    except loader_c.Unusual:
        return
    plain = load_text("t.yaml", text).documents
    assert all(type(d.data) in (dict, list) or not isinstance(d.data, dict | list)
               for d in plain)
    for docs in (plain, pickle.loads(pickle.dumps(plain))):
        assert [(d.index, d.line, d.column, repr(d.data)) for d in docs] == [
            (d.index, d.line, d.column, repr(d.data)) for d in positioned]  # NaN: by repr
        for fast, ref in zip(docs, positioned, strict=True):
            for path in _paths(ref.data):
                for key in (False, True):
                    assert fast.locate(path, key=key) == ref.locate(path, key=key), path


def test_a_clean_compile_reads_every_file_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Positions are found only for a problem: a compile without one never parses a file a
    second time (a check that computed a location it did not report would)."""
    from pincompile.pipeline import run

    def again(self: loader_c.Reload, index: int) -> Any:
        raise AssertionError(f"{self.file} was parsed again for a location")

    monkeypatch.setattr(loader_c.Reload, "positioned", again)
    result = run(load_tree(Path(__file__).parents[3] / "examples"), revision="r")
    assert result.ok and result.manifests


# --- only regular files are read ---------------------------------------------------------

def test_fifo_is_skipped_with_a_located_warning(tmp_path: Path) -> None:
    (tmp_path / "apps").mkdir()
    (tmp_path / "apps" / "ok.yaml").write_text("a: 1\n")
    os.mkfifo(tmp_path / "apps" / "pipe.yaml")
    result = load_tree(tmp_path)  # would block forever reading the FIFO
    assert triples(result.warnings) == [
        ("apps/pipe.yaml:1:1", "not-a-regular-file", "skipped: a FIFO, not a regular file")]
    assert result.diagnostics == [] and len(result.documents) == 1


def test_socket_and_device_are_skipped(tmp_path: Path) -> None:
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(tmp_path / "s.yaml"))
        (tmp_path / "null.yaml").symlink_to("/dev/null")  # leaves the root: refused first
        result = load_tree(tmp_path)
    finally:
        sock.close()
    assert [(w.file, w.code) for w in result.warnings] == [("s.yaml", "not-a-regular-file")]
    assert [d.code for d in result.diagnostics] == ["symlink-outside-root"]
    assert [w.message for w in load_tree(Path("/dev/null")).warnings] == [
        "skipped: a device, not a regular file"]
