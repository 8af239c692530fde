"""Deterministic serialization of generated objects, and writing the output tree atomically.

YAML is block style with **sorted keys** (one canonical order: ``apiVersion``, ``kind``,
``metadata``, ``spec`` happen to sort first, and a diff never depends on how code built a
dict), lists at their key's indentation (as kubectl writes them), multi-line strings as
``|`` blocks, no aliases and no line folding. Strings are plain only when that is certainly
read back as the same string (by YAML 1.1 and 1.2 readers alike), else quoted.

The emitter is our own because the output is plain data (dicts, lists, strings, ints,
bools): it is faster than PyYAML's representer, even over libyaml (bench/RESULTS.md,
"Tuning"), and a compile of a large repository is mostly serialization. JSON is sorted and
indented by two (orjson, in C). Same objects in, same bytes out.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson
import yaml

from pincompile.diagnostics import Diagnostic, Location
from pincompile.manifest import Manifest

MARKER = ".pincompile-output"
"""Written into every output directory; only such a directory is ever replaced."""
PLACEMENT_FILE = "placement.json"
FORMATS = ("yaml", "json")

_PLAIN = re.compile(r"[A-Za-z/][A-Za-z0-9 ._/@=+:,()-]*")
_RESOLVER = yaml.resolver.Resolver()
_STR_TAG = "tag:yaml.org,2002:str"
_GO_BOOLS = frozenset({"y", "Y", "n", "N"})
"""Booleans to YAML 1.1 readers such as go-yaml v2 (kubectl), but not to PyYAML."""
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r", "\0": "\\0"}


class OutputError(Exception):
    """The output directory cannot be (re)placed."""


def to_yaml(obj: Any) -> str:
    """Block-style YAML with sorted keys; ``yaml.safe_load`` gives ``obj`` back."""
    out: list[str] = []
    if type(obj) is dict and obj:
        _block_map(obj, 0, out)
    else:
        _node(obj, 0, out, top=True)
    return "".join(out)


def _block_map(value: dict[Any, Any], indent: int, out: list[str], lead: str | None = None
               ) -> None:
    """A non-empty plain dict as a block at ``indent`` (the line before it is ended; or, for
    a list item, ``lead`` — the item's ``- `` — starts the first key's line): what
    :func:`_node` writes, with the common cases (str, dict, list values) inlined: a compile
    of a large repository spends most of its time here."""
    pad = " " * indent
    keys = _KEYS
    for key in sorted(value):
        child = value[key]
        kind = type(child)
        head = f"{pad if lead is None else lead}{keys.get(key) or _key(key)}:"
        lead = None
        if kind is str and "\n" not in child:
            out.append(f"{head} {_plain(child) or _quoted(child)}\n")
        elif kind is dict and child:
            out.append(head + "\n")
            _block_map(child, indent + 2, out)
        elif kind is list and child:
            out.append(head + "\n")
            _block_list(child, indent, out)
        else:
            out.append(head)
            _node(child, indent if isinstance(child, list) else indent + 2, out)


def _block_list(value: list[Any], indent: int, out: list[str]) -> None:
    """A non-empty list as a block at ``indent`` (see :func:`_block_map`)."""
    pad = " " * indent
    for item in value:
        if type(item) is dict and item:
            _block_map(item, indent + 2, out, lead=f"{pad}- ")
        elif type(item) is str and "\n" not in item:
            out.append(f"{pad}- {_plain(item) or _quoted(item)}\n")
        else:
            out.append(f"{pad}-")
            _node(item, indent + 2, out)


def _node(value: Any, indent: int, out: list[str], *, top: bool = False) -> None:
    """Append ``value`` (after a ``key:`` or ``-`` that is already written)."""
    pad = " " * indent
    if isinstance(value, dict):
        if not value:
            out.append(" {}\n" if not top else "{}\n")
            return
        if not top:
            out.append("\n")
        for key in sorted(value):
            out.append(f"{pad}{_key(key)}:")
            child = value[key]
            # a list under a key is written at the key's indentation, as kubectl does
            _node(child, indent if isinstance(child, list) else indent + 2, out)
        return
    if isinstance(value, list):
        if not value:
            out.append(" []\n" if not top else "[]\n")
            return
        if not top:
            out.append("\n")
        for item in value:
            out.append(f"{pad}-")
            if isinstance(item, dict) and item:
                # the first key goes on the dash's line
                first = True
                for key in sorted(item):
                    out.append(f" {_key(key)}:" if first else f"{pad}  {_key(key)}:")
                    first = False
                    child = item[key]
                    _node(child, indent + 2 if isinstance(child, list) else indent + 4, out)
            else:
                _node(item, indent + 2, out)
        return
    if top:  # a document that is a bare scalar: never a block
        out.append(f"{_scalar(value, None)}\n")
    else:
        out.append(f" {_scalar(value, indent)}\n")


def _scalar(value: Any, indent: int | None) -> str:
    """One scalar; a multi-line string becomes a ``|`` block indented by ``indent``."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if not isinstance(value, str):  # floats and anything unusual: as PyYAML writes them
        return yaml.safe_dump(value, default_flow_style=True, width=1 << 30).removesuffix(
            "\n...\n").rstrip("\n")
    if "\n" in value and indent is not None:
        block = _literal(value, indent)
        if block is not None:
            return block
    return _plain(value) or _quoted(value)


def _key(key: Any) -> str:
    if type(key) is str:
        return _KEYS.get(key) or _KEYS.setdefault(key, _plain(key) or _quoted(key))
    text = str(key)
    return _plain(text) or _quoted(text)


_KEYS: dict[str, str] = {}
"""Written form of every mapping key seen (keys repeat across objects: few distinct)."""


@lru_cache(maxsize=65536)
def _plain(text: str) -> str | None:
    """``text`` unquoted when that is safe: starts with a letter or '/', only common
    characters, no ': ', and read back as the same string (not yes/no/null/...)."""
    if (_PLAIN.fullmatch(text) and not text.endswith((" ", ":")) and ": " not in text
            and text not in _GO_BOOLS
            and _RESOLVER.resolve(yaml.ScalarNode, text, (True, False)) == _STR_TAG):
        return text
    return None


def _quoted(text: str) -> str:
    """Single-quoted when printable (nothing to escape but ``'``), else double-quoted."""
    if text.isprintable():
        return "'" + text.replace("'", "''") + "'"
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) <= 0xFF:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


def _literal(text: str, indent: int) -> str | None:
    """A ``|`` block (content at ``indent``) for multi-line text of printable lines; None
    when it must be quoted instead."""
    body = text.rstrip("\n")
    trailing = len(text) - len(body)
    lines = body.split("\n")
    first = next((line for line in lines if line), "")
    if not first or first[0] == " " or not all(line.isprintable() for line in lines):
        return None  # a leading space would be read as indentation
    chomp = "-" if trailing == 0 else ("" if trailing == 1 else "+")
    pad = " " * indent
    content = "\n".join(pad + line if line else "" for line in lines)
    return f"|{chomp}\n{content}" + "\n" * (trailing - 1 if trailing > 1 else 0)


_JSON_OPTIONS = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def json_text(obj: Any) -> str:
    """JSON with sorted keys, indented by two, UTF-8 (no final newline)."""
    try:
        return orjson.dumps(obj, option=_JSON_OPTIONS, default=str).decode()
    except orjson.JSONEncodeError:  # what orjson refuses (an int beyond 64 bits, ...)
        return json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False, default=str)


def to_json(obj: Any) -> str:
    """A JSON file: :func:`json_text` and a newline."""
    return json_text(obj) + "\n"


MAX_OBJECT_BYTES = 1_572_864
"""1.5 MiB: the largest object a Kubernetes API server stores. The API server writes every
object to etcd in one request, and etcd refuses requests over its ``--max-request-bytes``,
1.5 MiB by default (the size Kubernetes documents for any object); it answers
"etcdserver: request is too large". Measured as the object's compact JSON."""


def object_bytes(obj: Any) -> int:
    """The size of ``obj`` as compact JSON, in UTF-8 bytes."""
    try:
        return len(orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS, default=str))
    except orjson.JSONEncodeError:
        return len(json.dumps(obj, separators=(",", ":"), ensure_ascii=False,
                              default=str).encode("utf-8", "surrogateescape"))


def too_large(m: Manifest, text: str | None = None) -> Diagnostic | None:
    """The error for ``m`` if the API server would refuse it as too large, located at the
    spec it came from. ``text``: ``m`` already serialized, which spares measuring objects
    that cannot be too large (JSON is at most four UTF-8 bytes per character of either
    format)."""
    if text is not None and len(text) * 4 <= MAX_OBJECT_BYTES:
        return None
    size = object_bytes(m.obj)
    if size <= MAX_OBJECT_BYTES:
        return None
    where = m.source.doc.start if m.source is not None else Location(m.relpath)
    namespace = f"{m.namespace}/" if m.namespace else ""
    return where.error(
        "object-too-large",
        f"generates {m.kind} '{namespace}{m.name}' for cluster {m.cluster} of {size} bytes; "
        f"the API server refuses objects over {MAX_OBJECT_BYTES} bytes (1.5 MiB)",
        "keep large data out of the spec (in the image, or fetched at start)")


def too_large_all(manifests: Iterable[Manifest]) -> list[Diagnostic]:
    """:func:`too_large` of every object of ``manifests`` (not serialized yet: each one's
    size is counted without its text; bench/RESULTS.md, "Tuning")."""
    return [d for d in map(too_large, manifests) if d is not None]


def serialize(obj: Any, fmt: str) -> str:
    return to_json(obj) if fmt == "json" else to_yaml(obj)


def manifest_path(m: Manifest, fmt: str) -> str:
    """``<cluster>/<namespace or _cluster>/<kind>-<name>.<yaml|json>``."""
    return m.relpath if fmt == "yaml" else m.relpath.removesuffix(".yaml") + ".json"


def render_files(manifests: Iterable[Manifest], fmt: str,
                 placement: Mapping[str, Any] | None = None) -> dict[str, str]:
    """Output path → content for every manifest (and ``placement.json``)."""
    files = {manifest_path(m, fmt): serialize(m.obj, fmt) for m in manifests}
    if placement is not None:
        files[PLACEMENT_FILE] = to_json(placement)
    return dict(sorted(files.items()))


def render_stream(manifests: Iterable[Manifest], fmt: str) -> str:
    """One stream: YAML documents (each headed by a ``# <path>`` comment), or a JSON ``List``
    (every item carries its cluster in the ``pincompute.io/cluster`` label)."""
    ordered = sorted(manifests, key=lambda m: m.relpath)
    return join_stream(((manifest_path(m, fmt), serialize(m.obj, fmt)) for m in ordered), fmt)


def join_stream(files: Iterable[tuple[str, str]], fmt: str) -> str:
    """:func:`render_stream` of objects already serialized: (output path, text), in order."""
    return "".join(stream_parts(files, fmt))


def stream_parts(files: Iterable[tuple[str, str]], fmt: str) -> Iterator[str]:
    """:func:`join_stream` in parts, to be written one after another (a YAML stream one
    object at a time, so it is never held twice; a JSON ``List`` as one text)."""
    if fmt == "json":
        yield to_json({"apiVersion": "v1", "kind": "List",
                       "items": [orjson.loads(text) for _, text in files]})
        return
    for path, text in files:
        yield f"---\n# {path}\n{text}"


def check_output_dir(out: Path) -> None:
    """Refuse a path that is not a directory pincompile wrote (or empty, or missing)."""
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise OutputError(f"{out} exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise OutputError(
            f"refusing to replace {out}: it is not empty and was not written by pincompile "
            f"(no {MARKER} file); choose another directory or remove it")


MARKER_TEXT = "written by pincompile compile; replaced on every run\n"


def marker_id(out: Path) -> str | None:
    """The snapshot id the last complete write recorded in ``out``'s marker, if any."""
    try:
        text = (out / MARKER).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    for line in text.splitlines():
        if line.startswith("snapshot: "):
            return line.removeprefix("snapshot: ").strip() or None
    return None


def _write_marker(directory: Path, snapshot_id: str) -> None:
    note = f"snapshot: {snapshot_id}\n" if snapshot_id else ""
    (directory / MARKER).write_text(MARKER_TEXT + note, encoding="utf-8")


def update_tree(out: Path, write: Mapping[str, str | bytes], remove: Iterable[str],
                snapshot_id: str) -> None:
    """Change ``out`` in place: write (each file atomically) and remove the given files,
    leave every other file untouched. The marker loses its snapshot id first and gets
    ``snapshot_id`` last, so an interrupted update is never taken for a complete one."""
    check_output_dir(out)
    _write_marker(out, "")
    for rel in remove:
        path = out / rel
        path.unlink(missing_ok=True)
        for parent in path.parents:  # directories left empty go too
            if parent == out or any(parent.iterdir()):
                break
            parent.rmdir()
    for rel, text in write.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8", "surrogateescape") if isinstance(text, str)
                         else text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    _write_marker(out, snapshot_id)


def write_tree(out: Path, files: Mapping[str, str], snapshot_id: str = "") -> None:
    """Replace ``out`` with exactly ``files`` (see :func:`replace_tree`); ``snapshot_id``
    is recorded in the marker (see :func:`update_tree`)."""

    def fill(tmp: Path) -> str:
        made: set[Path] = {tmp}
        for rel, text in files.items():
            path = tmp / rel
            if path.parent not in made:
                path.parent.mkdir(parents=True, exist_ok=True)
                made.add(path.parent)
            path.write_text(text, encoding="utf-8")
        return snapshot_id

    replace_tree(out, fill)


def replace_tree(out: Path, fill: Callable[[Path], str | None]) -> bool:
    """Replace ``out`` with what ``fill(directory)`` writes into a sibling temporary
    directory, swapped in by renames, so ``out`` is never half-written and nothing stale
    remains. ``fill`` returns the snapshot id for the marker, or None to leave ``out`` as
    it was (then False is returned)."""
    check_output_dir(out)
    parent = out.resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=parent))
    try:
        snapshot_id = fill(tmp)
        if snapshot_id is None:
            shutil.rmtree(tmp, ignore_errors=True)
            return False
        _write_marker(tmp, snapshot_id)
        os.chmod(tmp, 0o755)  # mkdtemp makes it private
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=parent))
            os.replace(out, old / "out")
            os.replace(tmp, out)
            remove_later(old)
        else:
            os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return True


def remove_later(tree: Path) -> None:
    """Delete ``tree`` (a replaced output) in a process of its own, so the command does not
    wait for it: deleting tens of thousands of files can take a filesystem longer than
    writing them. In this process when no such process can be started."""
    try:  # the shell returns at once; rm goes on alone (no zombie is left to this process)
        subprocess.run(["sh", "-c", 'rm -rf -- "$1" &', "sh", str(tree)], check=True,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, start_new_session=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        shutil.rmtree(tree, ignore_errors=True)
