"""An app's spec as text: the YAML document that defines it in its file (comments inside it
kept), in the working tree or at a git revision, and that document put back as it was at a
revision with the rest of its file and of the tree untouched (``rollback``; ``history
--diff``)."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from pincompile.appref import AppRef
from pincompile.source import gitsource
from pincompile.source.loader import read_tree

_SEPARATOR = re.compile(r"^---(?:[ \t].*)?$", re.M)


@dataclass(frozen=True)
class Found:
    """Where an app's document is: its file (relative to the spec root), the span of its
    text in it (its ``---`` line excluded), and that text."""

    file: str
    start: int
    end: int
    text: str


def spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each document of a YAML file, after its ``---`` line."""
    cuts = [m for m in _SEPARATOR.finditer(text)]
    starts = [0] + [m.end() + 1 if m.end() < len(text) else m.end() for m in cuts]
    ends = [m.start() for m in cuts] + [len(text)]
    return list(zip(starts, ends, strict=True))


def _identity(chunk: str) -> AppRef | None:
    """KIND/PROJECT/NAME of the spec a document defines (None: not one, or not YAML)."""
    try:
        data = yaml.load(chunk, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("metadata"), dict):
        return None
    meta = data["metadata"]
    return AppRef(str(data.get("kind")), str(meta.get("project") or ""), str(meta.get("name")))


def find(files: list[tuple[str, bytes]], app: AppRef) -> Found | None:
    """The document of ``files`` (name, content) that defines ``app``."""
    for name, raw in files:
        text = raw.decode("utf-8", "replace")
        if app.name not in text:
            continue
        for start, end in spans(text):
            if _identity(text[start:end]) == app:
                return Found(name, start, end, text[start:end])
    return None


def in_tree(root: Path, app: AppRef) -> tuple[list[tuple[str, bytes]], Found | None]:
    """The spec tree's files now, and ``app``'s document among them."""
    files, _ = read_tree(root)
    return files, find(files, app)


def at_revision(root: Path, revision: str, app: AppRef) -> tuple[str, Found | None]:
    """The commit ``revision`` names (GitError when none) and ``app``'s document then."""
    where = gitsource.spec_root(root)
    sha = gitsource.resolve_ref(where.toplevel, revision)
    files, _ = gitsource.read_revision(where, sha)
    return sha, find(files, app)


def put_back(current: str | None, found: Found | None, old: Found) -> str:
    """The file's text with ``app``'s document as ``old`` has it: in place of the one there
    (``found``), or added at the end of the file (or as a new file)."""
    body = old.text if old.text.endswith("\n") else old.text + "\n"
    if current is None:
        return body
    if found is None:
        joint = "" if current.endswith("\n") or not current else "\n"
        return f"{current}{joint}---\n{body}"
    tail = current[found.end:]
    return current[:found.start] + (body if tail else body.rstrip("\n") + "\n") + tail


def unified(name: str, before: str, after: str, old_label: str = "", new_label: str = ""
            ) -> str:
    """A unified diff of one file's text (``a/NAME`` → ``b/NAME``)."""
    return "".join(difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True),
        f"a/{name}" + (f" ({old_label})" if old_label else ""),
        f"b/{name}" + (f" ({new_label})" if new_label else "")))
