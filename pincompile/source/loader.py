"""Read a tree of YAML specs into documents that remember where every field came from.

The loader is the only place that touches raw YAML. It is strict where YAML is lax:
duplicate keys are errors, alias expansion is bounded in nodes and in bytes (no "billion
laughs", no alias repeating a long string), integers are bounded in digits, files must be
UTF-8 text, only regular files are read, symlinks that leave the repository root are
refused, and symlinked folders inside it are followed without looping.

Files are parsed by libyaml (:mod:`pincompile.source.loader_c`); anything unusual in a file (an
error, a duplicate key, a tag, a directive) sends that file to the reference loader
(:mod:`pincompile.source.loader_ruamel`), so meanings and messages are those of ruamel.yaml.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pincompile.diagnostics import Diagnostic
from pincompile.source import loader_c, loader_ruamel
from pincompile.source.loader_ruamel import (
    ALLOWED_TAGS,
    MAX_EXPANDED_BYTES,
    MAX_EXPANDED_NODES,
    MAX_INT_DIGITS,
)
from pincompile.source.positioned import Document, PathKey, YamlMap, YamlSeq, locate

__all__ = ["ALLOWED_TAGS", "API_GROUP", "API_VERSION", "MAX_CAREFUL_BYTES",
           "MAX_EXPANDED_BYTES", "MAX_EXPANDED_NODES", "MAX_FILE_BYTES", "MAX_FLOW_DEPTH",
           "MAX_INT_DIGITS", "YAML_SUFFIXES", "Document", "LoadResult", "PathKey", "YamlMap",
           "YamlSeq", "iter_yaml_files", "load_text", "load_tree", "locate", "read_tree"]

API_GROUP = "pincompute.io"
API_VERSION = f"{API_GROUP}/v1"
YAML_SUFFIXES = (".yaml", ".yml")
MAX_FILE_BYTES = 16 * 1024 * 1024
#: Flow collections ([...], {...}) nested deeper than this are refused before parsing: the
#: YAML scanner's cost grows with the square of the depth (bench/RESULTS.md, "Tuning").
MAX_FLOW_DEPTH = 100
#: The reference loader is pure Python and slow (bench/RESULTS.md, "Tuning"), slower with
#: merge keys: a file that needs it (see :mod:`pincompile.source.loader_c`) is read only up to
#: this size, so the cost of one hostile file stays bounded.
MAX_CAREFUL_BYTES = 256 * 1024

#: Text that makes a file that is not valid YAML worth reporting: it was meant as a spec.
_SPEC_MARKER = re.compile(
    r"pincompute\.io|^\s*kind:\s*[\"']?(Pin[A-Za-z]+|Cluster|Project|RuntimeProfile)\b",
    re.MULTILINE)

_BRACKETS = re.compile(r"[\[\]{}]")
_MERGE_KEY = re.compile(r"<<\s*:")


@dataclass
class LoadResult:
    """Everything the loader read: documents, the source texts, errors and warnings."""

    documents: list[Document] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    warnings: list[Diagnostic] = field(default_factory=list)
    """Located findings that do not make the specs invalid (a FIFO named ``*.yaml``)."""

    def extend(self, other: LoadResult) -> None:
        self.documents.extend(other.documents)
        self.sources.update(other.sources)
        self.diagnostics.extend(other.diagnostics)
        self.warnings.extend(other.warnings)


def _flow_too_deep(text: str) -> int | None:
    """Offset of the first bracket nested deeper than ``MAX_FLOW_DEPTH`` (quotes are not
    tracked: only text with over a hundred unbalanced brackets in strings is misjudged)."""
    depth = 0
    for match in _BRACKETS.finditer(text):
        depth += 1 if match.group() in "[{" else -1
        if depth > MAX_FLOW_DEPTH:
            return match.start()
        depth = max(depth, 0)
    return None


def _decode(file: str, raw: bytes) -> tuple[str | None, Diagnostic | None]:
    if len(raw) > MAX_FILE_BYTES:
        return None, Diagnostic(file, 1, 1, "file-too-large",
                                f"file is {len(raw)} bytes; the limit is {MAX_FILE_BYTES}")
    if b"\x00" in raw:
        offset = raw.index(b"\x00")
        line = raw.count(b"\n", 0, offset) + 1
        col = offset - (raw.rfind(b"\n", 0, offset) + 1) + 1
        return None, Diagnostic(file, line, col, "binary-file",
                                "file is binary (contains a NUL byte), not YAML text")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        return None, Diagnostic(file, line, col, "not-utf8",
                                f"file is not valid UTF-8 (byte 0x{raw[exc.start]:02x})",
                                "save the file as UTF-8")
    return text.removeprefix("\ufeff"), None


def load_text(file: str, raw: bytes | str) -> LoadResult:
    """Parse one file's content. ``file`` is the name used in locations."""
    result = LoadResult()
    if isinstance(raw, bytes):
        text, problem = _decode(file, raw)
        if problem is not None:
            result.diagnostics.append(problem)
            return result
        assert text is not None
    else:
        text = raw
    result.sources[file] = text
    too_deep = _flow_too_deep(text)
    if too_deep is not None:
        if not _SPEC_MARKER.search(text):
            return result  # someone else's YAML that we could not read anyway
        line = text.count("\n", 0, too_deep) + 1
        col = too_deep - (text.rfind("\n", 0, too_deep) + 1) + 1
        result.diagnostics.append(Diagnostic(
            file, line, col, "yaml-too-deep",
            f"YAML nesting is too deep: more than {MAX_FLOW_DEPTH} levels of [ ] and {{ }}"))
        return result
    try:
        result.documents.extend(
            loader_c.load_documents(file, text, MAX_EXPANDED_NODES, positions=False))
        return result
    except loader_c.Unusual as unusual:
        if len(text) > MAX_CAREFUL_BYTES:
            if _SPEC_MARKER.search(text):
                result.diagnostics.append(_too_large_to_read_carefully(file, text, unusual))
            return result
    except loader_c.Refused as refused:
        result.documents.extend(refused.documents)
        result.diagnostics.append(refused.problem)
        return result
    documents, problem, always = loader_ruamel.load_documents(file, text)
    result.documents.extend(documents)
    # Broken YAML that is not a spec (a Helm template, someone else's config) is not ours.
    if problem is not None and (always or _SPEC_MARKER.search(text)):
        result.diagnostics.append(problem)
    return result


#: What made the fast loader give a file up, in a reader's words.
_UNUSUAL_WORDS = {"tag:yaml.org,2002:merge": "a merge key (<<)", "text": "a tab, a "
                  "directive or characters YAML readers disagree on", "deep": "deep nesting",
                  "long integer": f"an integer of more than {MAX_INT_DIGITS} digits"}


def _too_large_to_read_carefully(file: str, text: str, unusual: loader_c.Unusual
                                 ) -> Diagnostic:
    """A large file the fast loader gave up on: libyaml's own syntax error where it found
    one, else which feature (and where) needs the reference loader, which reads small
    files only."""
    cause = unusual.__cause__
    syntax = getattr(cause, "problem_mark", None)
    if syntax is not None:
        problem = str(getattr(cause, "problem", None) or cause)
        if "nesting depth" in problem:
            return Diagnostic(file, syntax.line + 1, syntax.column + 1, "yaml-too-deep",
                              "YAML nesting is too deep")
        return Diagnostic(file, syntax.line + 1, syntax.column + 1, "yaml-syntax",
                          f"invalid YAML: {problem}")
    what = _UNUSUAL_WORDS.get(str(unusual), str(unusual))
    line, column = (unusual.mark.line + 1, unusual.mark.column + 1) if unusual.mark else (1, 1)
    merge = _MERGE_KEY.search(text) if unusual.mark is None and "merge" in str(unusual) \
        else None
    if merge is not None:
        line = text.count("\n", 0, merge.start()) + 1
        column = merge.start() - (text.rfind("\n", 0, merge.start()) + 1) + 1
    if str(unusual) == "duplicate key":
        return Diagnostic(file, line, column, "duplicate-key",
                          f'duplicate key "{unusual.key}"', "remove one of the two")
    return Diagnostic(file, line, column, "file-too-large",
                      f"file is {len(text.encode())} bytes and uses {what}, which is read "
                      f"only in files of up to {MAX_CAREFUL_BYTES} bytes",
                      f"write it without {what}, or split the file")


#: Codes of the walk's problems that are warnings: the folder is skipped, the specs are
#: not invalid for it.
WALK_WARNINGS = frozenset({"folder-symlink-outside-root", "folder-symlink-loop",
                           "folder-symlink-hidden"})


def hidden_path(path: str) -> bool:
    """Whether ``path`` (relative to the spec root; "" or "." is the root) is, or is in, a
    hidden file or folder, which the walk skips."""
    return path not in ("", ".") and any(part.startswith(".") for part in path.split("/"))


def unread_target(target: str) -> bool:
    """Whether ``target`` (a path relative to the spec root) is a file the walk does not
    read where it lies: hidden, or not YAML. A symlink may not lead there, or the spec it
    loads would change without review by the code owners of the symlink's folder."""
    return hidden_path(target) or not target.endswith(YAML_SUFFIXES)


UNREAD_TARGET_HINT = ("a symlink may lead only to a spec file read where it lies (not hidden, "
                      ".yaml or .yml), so that its folder's code owners review every change")


def add_walk_problem(result: LoadResult, problem: Diagnostic) -> None:
    """Record a problem :func:`iter_yaml_files` yielded: a warning or an error."""
    if problem.code in WALK_WARNINGS:
        result.warnings.append(problem)
    else:
        result.diagnostics.append(problem)


def iter_yaml_files(root: Path) -> Iterator[tuple[str, str | None, Diagnostic | None]]:
    """Yield (relative name, path, problem) for every YAML file under ``root``, sorted.

    Hidden files and folders are skipped. Symlinked folders are followed when they lead to
    a folder inside ``root`` that is not one of their own parents, and that no other
    symlink led to before (so the walk stays linear in the tree). A symlink whose target
    leaves ``root`` yields a problem instead of a path: an error for a file, a warning
    (see :func:`add_walk_problem`) for a folder, which is skipped.
    """
    root = root.resolve()
    yield from _walk(root, str(root), "", (str(root),), set())


def _walk(root: Path, folder: str, prefix: str, parents: tuple[str, ...], linked: set[str]
          ) -> Iterator[tuple[str, str | None, Diagnostic | None]]:
    """One directory of :func:`iter_yaml_files` (``prefix``: its name relative to root;
    ``parents``: the real paths of the folders it is inside, itself included; ``linked``:
    the real paths of the folders symlinks led to so far). Names are
    sorted as ``os.walk`` + ``sorted`` would list them (files of a directory before its
    subdirectories)."""
    try:
        with os.scandir(folder) as found:
            entries = sorted(found, key=lambda e: e.name)
    except OSError:
        return
    dirs: list[tuple[os.DirEntry[str], str]] = []
    for entry in entries:
        name = entry.name
        if name.startswith("."):
            continue
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        rel = prefix + name
        if is_dir:
            real = os.path.realpath(entry.path) if entry.is_symlink() else ""
            problem = _folder_link_problem(root, rel, real, parents, linked)
            if problem is not None:
                yield rel, None, problem
            else:
                if real:
                    linked.add(real)
                dirs.append((entry, real or os.path.join(parents[-1], name)))
            continue
        if not name.endswith(YAML_SUFFIXES):
            continue
        if entry.is_symlink():
            target = Path(entry.path).resolve()
            if not target.is_relative_to(root):
                yield rel, None, Diagnostic(
                    rel, 1, 1, "symlink-outside-root",
                    "symlink points outside the repository; not followed",
                    "copy the file into the repository instead")
                continue
            inside = target.relative_to(root).as_posix()
            if unread_target(inside):
                yield rel, None, Diagnostic(
                    rel, 1, 1, "symlink-unread-target",
                    f"symlink leads to {inside}, a file the walk does not read; not followed",
                    UNREAD_TARGET_HINT)
                continue
        yield rel, entry.path, None
    for entry, real in dirs:
        yield from _walk(root, entry.path, f"{prefix}{entry.name}/", (*parents, real),
                         linked)


def _folder_link_problem(root: Path, rel: str, real: str, parents: tuple[str, ...],
                         linked: set[str]) -> Diagnostic | None:
    """Why the symlinked folder ``rel`` (leading to ``real``; "" for a plain folder) is
    not walked, if it is not."""
    if not real:
        return None
    if not Path(real).is_relative_to(root):
        return Diagnostic(rel, 1, 1, "folder-symlink-outside-root",
                          "folder symlink points outside the repository; skipped",
                          "copy the folder into the repository instead")
    return folder_link_problem(rel, Path(real).relative_to(root).as_posix(), real, parents,
                               linked)


def folder_link_problem(rel: str, inside: str, key: str, parents: tuple[str, ...],
                        linked: set[str]) -> Diagnostic | None:
    """Why the symlinked folder ``rel``, leading to ``inside`` (a folder of the spec root,
    known to the walk as ``key``), is skipped, if it is: it leads into a hidden folder, to a
    folder it is in (``parents``), or to one another symlink led to (``linked``). The
    working-tree and the git-revision walks share it."""
    if hidden_path(inside):
        return Diagnostic(rel, 1, 1, "folder-symlink-hidden",
                          f"folder symlink leads into the hidden folder {inside}, which the "
                          "walk skips; skipped", UNREAD_TARGET_HINT)
    if key in parents:
        return Diagnostic(rel, 1, 1, "folder-symlink-loop",
                          "folder symlink leads back to a folder it is in; skipped")
    if key in linked:
        return Diagnostic(rel, 1, 1, "folder-symlink-loop",
                          "folder symlink leads to a folder another symlink led to; skipped")
    return None


def read_tree(root: Path) -> tuple[list[tuple[str, bytes]], LoadResult]:
    """The YAML files under ``root`` (or ``root`` itself), in load order, as (name,
    content); and a result holding what the walk found (refused symlinks, skipped FIFOs).

    Only regular files are read: a FIFO, device or socket named ``*.yaml`` would block or
    never end, so it gets a located warning and is skipped.
    """
    found = LoadResult()
    files: list[tuple[str, bytes]] = []
    if root.is_dir():
        walk: Iterable[tuple[str, str | Path | None, Diagnostic | None]] = iter_yaml_files(root)
    else:
        walk = [(root.name, root, None)]
    for rel, path, problem in walk:
        if problem is not None:
            add_walk_problem(found, problem)
            continue
        assert path is not None
        raw = read_regular_file(rel, path, found)
        if raw is not None:
            files.append((rel, raw))
    return files, found


def load_tree(root: Path) -> LoadResult:
    """Load every YAML file below ``root`` (or ``root`` itself when it is a file), as
    :func:`read_tree` finds them."""
    files, result = read_tree(root)
    for rel, raw in files:
        result.extend(load_text(rel, raw))
    return result


def read_regular_file(rel: str, path: str | Path, result: LoadResult) -> bytes | None:
    """The bytes of ``path`` if it is a regular file; else a warning (or error) in
    ``result`` and None."""
    try:
        kind = _not_regular(os.stat(path).st_mode)
        if kind is None:
            # opened without blocking and checked again: the name may be replaced meanwhile
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            with open(fd, "rb") as handle:
                kind = _not_regular(os.fstat(fd).st_mode)
                if kind is None:
                    return handle.read()
        result.warnings.append(Diagnostic(
            rel, 1, 1, "not-a-regular-file", f"skipped: {kind}, not a regular file"))
        return None
    except OSError as exc:
        result.diagnostics.append(Diagnostic(rel, 1, 1, "unreadable", f"cannot read: {exc}"))
        return None


def _not_regular(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a special file"
