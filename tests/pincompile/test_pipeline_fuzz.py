"""Hostile spec trees: examples/ with a few files mutated as an attacker (or a bad day)
would — values of the wrong type, huge numbers, deep nesting, alias bombs, unknown tags,
odd unicode, keys dropped or added, references broken. ``validate`` (and often ``compile
-o -``) must end with exit 0, 1 or 2, print no traceback, locate every error and warning
at ``file:line:column``, and stay within a memory bound."""

from __future__ import annotations

import copy
import io
import os
import re
import tempfile
import traceback
import tracemalloc
from functools import cache
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML
from test_pipeline_property import KEYS, VALUES

from pincompile.cli import cli
from tests.support.specs import REPO_ROOT, write_tree

EXAMPLES = REPO_ROOT / "examples"
#: Peak Python memory (tracemalloc) one command may take on an examples-sized tree.
PEAK_BYTES = 300 * 2**20
LOCATED = re.compile(r"[^\s:][^:]*:\d+:\d+: (error|warning)\[[a-z0-9-]+\]: ")
HUGE = "__huge_number__"


@cache
def _tree() -> dict[str, str]:
    return {p.relative_to(EXAMPLES).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(EXAMPLES.rglob("*.yaml"))}


@cache
def _names() -> tuple[str, ...]:
    """Names the examples refer to one another by, to break references plausibly."""
    found = re.findall(r"(?:name|project|target|sidecars): \[?([a-z][a-z0-9-]+)",
                       "".join(_tree().values()))
    return tuple(sorted(set(found)))


def _yaml() -> YAML:
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    return yaml


def _documents(text: str) -> list[Any]:
    return [d for d in _yaml().load_all(text) if d is not None]


ODD_TEXT = st.sampled_from([
    "\u202eevil", "zero\u200bwidth", "\ufeffbom", "caf\u00e9", "\U0001f600", "\u0085next",
    "tab\there", "a" * 70, "x" * 5000, "..", "../../etc/passwd", "-", "--flag", "$(id)",
    "{{ 7 * 7 }}", "名前", "A" * 253, "\\", "'", '"',
])
DEEP = st.integers(20, 150).map(lambda n: {"deep": _nest(n)})
HOSTILE = st.one_of(VALUES, ODD_TEXT, DEEP, st.just(HUGE), st.sampled_from(_names()),
                    st.integers(min_value=-2**63, max_value=2**64))


def _nest(depth: int) -> Any:
    value: Any = "bottom"
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


@st.composite
def mutated_data(draw: st.DrawFn, data: Any) -> Any:
    """``data`` with one to four values replaced, keys dropped or added."""
    data = copy.deepcopy(data)
    for _ in range(draw(st.integers(1, 4))):
        paths = [p for p in _paths(data) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = data
        for part in path[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["replace", "replace", "drop", "add"]))
        if action == "replace":
            parent[path[-1]] = draw(HOSTILE)
        elif action == "drop":
            del parent[path[-1]]
        elif isinstance(parent[path[-1]], dict):
            parent[path[-1]][draw(KEYS)] = draw(HOSTILE)
        else:
            parent[path[-1]] = {draw(KEYS): draw(HOSTILE)}
    return data


TAGS = st.sampled_from(["!!python/object:os.system", "!!python/name:os.system", "!!omap",
                        "!!set", "!!binary", "!custom", "!!str", "!!int", "!!timestamp"])
BOMBS = st.sampled_from([
    # bytes: one long string repeated by alias
    'x-long: &s "' + "x" * 100_000 + '"\nx-many: [' + ", ".join(["*s"] * 60) + "]\n",
    # nodes: the billion laughs
    "x-a: &a [l, l, l, l, l, l, l, l, l]\n" + "".join(
        f"x-{b}: &{b} [" + ", ".join([f"*{a}"] * 9) + "]\n"
        for a, b in zip("abcdefgh", "bcdefghi", strict=True)),
])


@st.composite
def mutated_text(draw: st.DrawFn, text: str) -> str:
    """``text`` with YAML the data model cannot express: tags, aliases, huge numbers."""
    text = text.replace(f"'{HUGE}'", "9" * draw(st.sampled_from([25, 1001, 5000])))
    text = text.replace(HUGE, "9" * 5000)
    action = draw(st.sampled_from(["none", "tag", "bomb", "unicode", "cut"]))
    lines = text.splitlines(keepends=True)
    at = draw(st.integers(0, max(len(lines) - 1, 0)))
    if action == "tag" and lines and ": " in lines[at]:
        key, _, value = lines[at].partition(": ")
        lines[at] = f"{key}: {draw(TAGS)} {value}"
    elif action == "bomb":
        top = next((i for i, line in enumerate(lines) if line.startswith("kind:")), 0)
        lines.insert(top + 1, draw(BOMBS))
    elif action == "unicode" and lines:
        lines[at] = lines[at].rstrip("\n") + draw(st.sampled_from(
            ["\u202e", "\u2028", "\x85", "\x00", "\ufeff", "\x1b[31m", "\ud800"])) + "\n"
    elif action == "cut":
        lines = lines[:at]
    return "".join(lines)


@st.composite
def hostile_trees(draw: st.DrawFn) -> dict[str, str | bytes]:
    """examples/ with one to three files mutated (a file may also be dropped or added)."""
    tree: dict[str, str | bytes] = dict(_tree())
    names = sorted(_tree())
    for name in draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True)):
        if draw(st.integers(0, 9)) == 0:
            del tree[name]
            continue
        documents = _documents(_tree()[name])
        index = draw(st.integers(0, len(documents) - 1))
        documents[index] = draw(mutated_data(documents[index]))
        out = io.StringIO()
        _yaml().dump_all(documents, out)
        text = draw(mutated_text(out.getvalue()))
        tree[name] = _encoded(text)
    if draw(st.booleans()):
        tree["apps/extra/added.yaml"] = _encoded(draw(mutated_text(
            "apiVersion: pincompute.io/v1\nkind: " + draw(st.sampled_from(
                ["PinApp", "PinPod", "Project", "Cluster", "PinterestSideCar", "Nope"])) +
            "\nmetadata: {name: added, project: search}\nspec: {}\n")))
    return tree


def _encoded(text: str) -> str | bytes:
    """A text with a lone surrogate (not UTF-8) as the bytes a file would hold."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")
    return text


def _run(*args: str) -> tuple[int, str, int]:
    """(exit code, output, peak traced bytes) of the CLI run in this process."""
    tracemalloc.start()
    try:
        result = CliRunner().invoke(cli, list(args))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        args, "".join(traceback.format_exception(*result.exc_info))[-3000:])
    return result.exit_code, result.output, peak


def _assert_clean(code: int, output: str, peak: int) -> None:
    assert code in (0, 1, 2), output[-3000:]
    assert "Traceback" not in output and "internal error" not in output, output[-3000:]
    assert "error[internal]" not in output, output[-3000:]
    for line in output.splitlines():
        if "error[" in line or "warning[" in line:
            assert LOCATED.match(line), line[:300]
    assert peak < PEAK_BYTES, f"peak {peak / 2**20:.0f} MiB"


@settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "30")), deadline=None,
          derandomize=not os.environ.get("FUZZ_EXAMPLES"),
          # no shrinking: a failing tree is reported as drawn, in bounded time (shrinking
          # whole trees took over five minutes)
          phases=(Phase.explicit, Phase.reuse, Phase.generate),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(tree=hostile_trees(), also_compile=st.booleans())
def test_a_hostile_tree_ends_in_located_errors(tree: dict[str, str | bytes],
                                               also_compile: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = write_tree(Path(tmp) / "repo", tree)
        code, output, peak = _run("validate", "-j", "1", "--no-cache", str(root))
        _assert_clean(code, output, peak)
        if also_compile:
            _assert_clean(*_run("compile", "-j", "1", "--no-cache", str(root), "--out-dir", "-",
                                "-q", "--revision", "fuzz"))
