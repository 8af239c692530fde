"""``pincompile set image|replicas``: edit one field of a spec in place, as CI bumps do.

The edit replaces exactly the characters of the old value (found by ruamel.yaml's
round-trip composer, which reports where each node starts and ends), so comments, key
order, quoting elsewhere and formatting stay as they were. The whole tree is validated
with the edit before anything is written; an edit that would not validate is refused.
"""

from __future__ import annotations

import difflib
import sys
from pathlib import Path
from typing import Any

import click
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from pincompile.appref import AppRefError, parse_app_ref
from pincompile.commands.common import (
    EXIT_INVALID,
    EXIT_OK,
    EXIT_USAGE,
    fail,
    report,
    write_atomically,
)
from pincompile.compiler import Compiler
from pincompile.emit.output import to_yaml
from pincompile.source.loader import read_tree

_ROOT = click.option("-C", "--root", "root", default=".", show_default=True,
                     type=click.Path(exists=True, file_okay=False, path_type=Path),
                     help="The spec tree the spec is in.")


@click.group("set")
def set_group() -> None:
    """Change one field of a spec in its file, keeping comments and formatting.

    \b
    The spec is named KIND/PROJECT/NAME (as `explain` names it). The whole tree is
    validated with the change before the file is written; a change that would make it
    invalid is refused with located errors (exit 1) and nothing is written.

    \b
    Examples:
      pincompile set image PinApp/shop/web main=registry.internal/shop/web:1.5.0
      pincompile set replicas PinApp/shop/web 6 -C specs/
    """


@set_group.command("image")
@click.argument("spec")
@click.argument("assignment", metavar="CONTAINER=IMAGE")
@_ROOT
def set_image(spec: str, assignment: str, root: Path) -> None:
    """Set the image of container CONTAINER of SPEC (KIND/PROJECT/NAME).

    \b
    Example:
      pincompile set image PinApp/shop/web main=registry.internal/shop/web:1.5.0
    """
    container, sep, image = assignment.partition("=")
    if not sep or not container or not image:
        fail(f"expected CONTAINER=IMAGE, got '{assignment}'", EXIT_USAGE)
    _edit(root, spec, lambda data: _image_path(data, container, spec), image)


@set_group.command("replicas")
@click.argument("spec")
@click.argument("replicas", type=click.IntRange(min=0))
@_ROOT
def set_replicas(spec: str, replicas: int, root: Path) -> None:
    """Set spec.replicas of SPEC (KIND/PROJECT/NAME).

    \b
    Example:
      pincompile set replicas PinApp/shop/web 6
    """
    def path(data: Any) -> tuple[str | int, ...]:
        if not isinstance(data.get("spec"), dict) or "replicas" not in data["spec"]:
            fail(f"{spec} has no spec.replicas to change (add it to the file by hand)",
                 EXIT_USAGE)
        return ("spec", "replicas")

    _edit(root, spec, path, replicas)


def _image_path(data: Any, container: str, spec: str) -> tuple[str | int, ...]:
    body = data.get("spec") if isinstance(data, dict) else None
    for prefix in (("template",), ()):
        node: Any = body
        for part in prefix:
            node = node.get(part) if isinstance(node, dict) else None
        containers = node.get("containers") if isinstance(node, dict) else None
        if isinstance(containers, list):
            for i, item in enumerate(containers):
                if isinstance(item, dict) and item.get("name") == container:
                    return ("spec", *prefix, "containers", i, "image")
            names = [str(c.get("name")) for c in containers if isinstance(c, dict)]
            fail(f"{spec} has no container '{container}'; containers: {', '.join(names)}",
                 EXIT_USAGE)
    fail(f"{spec} has no containers", EXIT_USAGE)
    raise AssertionError  # fail() exits


def _edit(root: Path, spec: str, find: Any, value: Any) -> None:
    try:
        key = parse_app_ref(spec)
    except AppRefError as exc:
        fail(str(exc), EXIT_USAGE)
    files, walked = read_tree(root)
    compiler = Compiler(remember=False)
    before = compiler.compile(files, revision="set", expand=False, loaded=walked)
    entry = next((e for e in before.catalog.entries if e.resource.key == key), None)
    if entry is None:
        known = ["/".join(e.resource.key) for e in before.catalog.entries]
        close = difflib.get_close_matches(str(key), known, 1, 0.6)
        fail(f"no spec {spec} under {root}" + (f"; did you mean '{close[0]}'?" if close
                                                 else ""), EXIT_INVALID)
    assert entry is not None
    path = find(entry.doc.data)
    raw_text = dict(files)[entry.file].decode("utf-8")
    bom = "\ufeff" if raw_text.startswith("\ufeff") else ""
    text = raw_text.removeprefix(bom)
    new_text = _splice(text, entry.doc.index, path, value)
    if new_text is None:
        fail(f"cannot edit {entry.file}: the value at {'.'.join(map(str, path))} was not found "
             "as written", EXIT_USAGE)
    assert new_text is not None
    changed = [(n, new_text.encode() if n == entry.file else raw) for n, raw in files]
    after = compiler.compile(changed, revision="set", loaded=_walk_again(root))
    if after.diagnostics:
        report(after.diagnostics, after.sources, "human")
        click.echo("refused: the change would make the specs invalid; nothing written",
                   err=True)
        sys.exit(EXIT_INVALID)
    write_atomically(root / entry.file, bom + new_text)
    click.echo(f"{entry.file}: {spec} {'.'.join(map(str, path))} = {value}")
    sys.exit(EXIT_OK)


def _walk_again(root: Path) -> Any:
    return read_tree(root)[1]


def _scalar_text(value: Any) -> str:
    """``value`` as a YAML scalar, quoted only when it must be (as compile writes it)."""
    return to_yaml({"v": value}).split(":", 1)[1].strip()


def _splice(text: str, index: int, path: tuple[str | int, ...], value: Any) -> str | None:
    """``text`` with the scalar at ``path`` of document ``index`` replaced, or None."""
    try:
        nodes = [n for n in YAML(typ="rt").compose_all(text) if n is not None]
    except YAMLError:
        return None
    if index >= len(nodes):
        return None
    node: Node | None = nodes[index]
    for part in path:
        node = _child(node, part)
        if node is None:
            return None
    if not isinstance(node, ScalarNode) or node.style in ("|", ">"):
        return None
    start, end = node.start_mark.index, node.end_mark.index
    return text[:start] + _scalar_text(value) + text[end:]


def _child(node: Node | None, part: str | int) -> Node | None:
    if isinstance(node, MappingNode) and isinstance(part, str):
        return next((v for k, v in node.value if isinstance(k, ScalarNode) and k.value == part),
                    None)
    if isinstance(node, SequenceNode) and isinstance(part, int) and part < len(node.value):
        child: Node = node.value[part]
        return child
    return None
