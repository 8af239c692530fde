"""Read a tree of YAML specs into documents that remember where every field came from.

The loader is the only place that touches raw YAML. It is strict where YAML is lax:
duplicate keys are errors, alias expansion is bounded (no "billion laughs"), files must be
UTF-8 text, and symlinks that leave the repository root are refused.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.constructor import DuplicateKeyError
from ruamel.yaml.docinfo import DocInfo, version
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, SequenceNode

from pincompile.diagnostics import Diagnostic, Location

API_GROUP = "pincompute.io"
API_VERSION = f"{API_GROUP}/v1"
YAML_SUFFIXES = (".yaml", ".yml")
MAX_FILE_BYTES = 16 * 1024 * 1024
#: How many nodes a document may have once its aliases are expanded.
MAX_EXPANDED_NODES = 200_000
#: Flow collections ([...], {...}) nested deeper than this are refused before parsing: the
#: YAML scanner's cost grows with the square of the depth (1,000 levels take seconds).
MAX_FLOW_DEPTH = 100
#: Explicit tags a spec may use; others (``!!python/...``, ``!!set``, ``!custom``, and
#: ``!!str``, which round-trip loading keeps as a tagged scalar) build values no field holds.
ALLOWED_TAGS = frozenset({"!!int", "!!float", "!!bool", "!!null", "!!map", "!!seq"})

#: Text that makes a file that is not valid YAML worth reporting: it was meant as a spec.
_SPEC_MARKER = re.compile(
    r"pincompute\.io|^\s*kind:\s*[\"']?(Pin[A-Za-z]+|Cluster|Project|RuntimeProfile)\b",
    re.MULTILINE)

_BRACKETS = re.compile(r"[\[\]{}]")

PathKey = tuple[str | int, ...]


@dataclass
class Document:
    """One YAML document of a file, with its position in the file."""

    file: str
    index: int
    data: Any
    line: int
    column: int
    problems: list[Diagnostic] = field(default_factory=list)
    """Loader findings reported only if the document turns out to be a spec (e.g. YAML tags,
    which foreign files such as CloudFormation templates use freely)."""

    @property
    def kind(self) -> str | None:
        kind = self.data.get("kind") if isinstance(self.data, dict) else None
        return kind if isinstance(kind, str) else None

    @property
    def start(self) -> Location:
        return Location(self.file, self.line, self.column)

    def locate(self, path: Iterable[str | int], *, key: bool = False) -> Location:
        """Location of the value at ``path`` (or of its key when ``key``).

        Walks as deep as the path exists; a missing tail points at its nearest parent.
        """
        return locate(self.file, self.data, tuple(path), key=key, default=self.start)


@dataclass
class LoadResult:
    """Everything the loader read: documents, the source texts and any errors."""

    documents: list[Document] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def extend(self, other: LoadResult) -> None:
        self.documents.extend(other.documents)
        self.sources.update(other.sources)
        self.diagnostics.extend(other.diagnostics)


def locate(
    file: str, data: Any, path: PathKey, *, key: bool = False, default: Location | None = None
) -> Location:
    """Find the 1-based line and column of ``path`` inside ruamel round-trip data."""
    best = default or Location(file)
    node = data
    for depth, part in enumerate(path):
        last = depth == len(path) - 1
        try:
            if isinstance(node, CommentedMap) and part in node:
                line, col = node.lc.key(part) if (key and last) else node.lc.value(part)
                if not (key and last):
                    child = node[part]
                    # Block collections report the position of their first element better
                    # than the position of the value indicator.
                    if (isinstance(child, CommentedMap | CommentedSeq)
                            and child.lc.line is not None
                            and (not child or child.fa.flow_style())):
                        line, col = child.lc.line, child.lc.col
                best = Location(file, line + 1, col + 1)
                node = node[part]
            elif isinstance(node, CommentedSeq) and isinstance(part, int) and part < len(node):
                line, col = node.lc.item(part)
                best = Location(file, line + 1, col + 1)
                node = node[part]
            else:
                break
        except (AttributeError, KeyError, TypeError, IndexError):
            break
    return best


def _new_yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    return yaml


def _expanded_size(node: Node, memo: dict[int, int], limit: int) -> int:
    """Nodes in ``node`` with aliases expanded, computed in linear time (memoised by id)."""
    cached = memo.get(id(node))
    if cached is not None:
        return cached
    memo[id(node)] = 1  # guards against recursive aliases
    total = 1
    if isinstance(node, SequenceNode):
        for child in node.value:
            total += _expanded_size(child, memo, limit)
            if total > limit:
                break
    elif isinstance(node, MappingNode):
        for k, v in node.value:
            total += _expanded_size(k, memo, limit) + _expanded_size(v, memo, limit)
            if total > limit:
                break
    memo[id(node)] = total
    return total


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


def _explicit_tag(node: Node) -> str | None:
    """The tag as written (``!!set``, ``!x``), or None when the tag was resolved implicitly."""
    ctag = getattr(node, "ctag", None)
    handle = getattr(ctag, "handle", None)
    return None if handle is None else f"{handle}{getattr(ctag, 'suffix', '')}"


def _unsupported_tag(node: Node, seen: set[int]) -> Node | None:
    """The first node with an explicit tag outside ``ALLOWED_TAGS`` (each node visited once)."""
    if id(node) in seen:
        return None
    seen.add(id(node))
    if _explicit_tag(node) not in (None, *ALLOWED_TAGS):
        return node
    children: list[Node] = []
    if isinstance(node, SequenceNode):
        children = list(node.value)
    elif isinstance(node, MappingNode):
        children = [n for pair in node.value for n in pair]
    for child in children:
        found = _unsupported_tag(child, seen)
        if found is not None:
            return found
    return None


def _yaml_error(file: str, exc: YAMLError) -> Diagnostic:
    if isinstance(exc, DuplicateKeyError):
        mark = exc.problem_mark
        first = exc.context_mark
        key = str(exc.problem).split('"')[1] if '"' in str(exc.problem) else "?"
        where = f" (first defined at line {first.line + 1})" if first is not None else ""
        return Diagnostic(
            file, mark.line + 1, mark.column + 1, "duplicate-key",
            f'duplicate key "{key}"{where}', "each key may appear once in a mapping",
        )
    if isinstance(exc, MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        problem = exc.problem or "invalid YAML"
        context = f" {exc.context}" if exc.context else ""
        return Diagnostic(file, mark.line + 1, mark.column + 1, "yaml-syntax",
                          f"invalid YAML: {problem}{context}".strip())
    return Diagnostic(file, 1, 1, "yaml-syntax", f"invalid YAML: {exc}")


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
    yaml = _new_yaml()
    try:
        # What YAML.load_all() sets up before parsing (a %YAML directive needs it).
        yaml.doc_infos.append(DocInfo(requested_version=version(yaml.version)))
        yaml.tags = {}
        constructor, parser = yaml.get_constructor_parser(text)
        composer = yaml.composer
        index = 0
        try:
            while composer.check_node():
                node = composer.get_node()
                if node is None:
                    continue
                if _expanded_size(node, {}, MAX_EXPANDED_NODES) > MAX_EXPANDED_NODES:
                    mark = node.start_mark
                    result.diagnostics.append(Diagnostic(
                        file, mark.line + 1, mark.column + 1, "alias-bomb",
                        f"document expands to more than {MAX_EXPANDED_NODES} nodes through "
                        "YAML aliases; refused", "avoid deeply nested anchors and aliases"))
                    return result
                tagged = _unsupported_tag(node, set())
                data = constructor.construct_document(node)
                mark = node.start_mark
                if data is not None:
                    doc = Document(file, index, data, mark.line + 1, mark.column + 1)
                    if tagged is not None:
                        tag_mark = tagged.start_mark
                        doc.problems.append(Diagnostic(
                            file, tag_mark.line + 1, tag_mark.column + 1, "unsupported-tag",
                            f"YAML tag '{_explicit_tag(tagged)}' is not supported in specs",
                            "remove the tag: specs use plain YAML values (quote a string)"))
                    result.documents.append(doc)
                index += 1
                yaml.doc_infos.append(DocInfo(requested_version=version(yaml.version)))
        finally:
            parser.dispose()
    except YAMLError as exc:
        problem = _yaml_error(file, exc)
    except RecursionError:
        problem = Diagnostic(file, 1, 1, "yaml-too-deep", "YAML nesting is too deep")
    except (ValueError, TypeError, OverflowError, LookupError, AttributeError,
            AssertionError) as exc:  # ruamel edge cases: never a traceback for odd input
        problem = Diagnostic(file, 1, 1, "yaml-syntax", f"invalid YAML: {exc}")
    else:
        return result
    # Broken YAML that is not a spec (a Helm template, someone else's config) is not ours.
    if _SPEC_MARKER.search(text):
        result.diagnostics.append(problem)
    return result


def iter_yaml_files(root: Path) -> Iterator[tuple[str, Path | None, Diagnostic | None]]:
    """Yield (relative name, path, problem) for every YAML file under ``root``, sorted.

    Hidden files and folders are skipped. A symlink whose target leaves ``root`` yields a
    problem instead of a path.
    """
    root = root.resolve()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith(".") or not name.endswith(YAML_SUFFIXES):
                continue
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                target = path.resolve()
                if not target.is_relative_to(root):
                    yield rel, None, Diagnostic(
                        rel, 1, 1, "symlink-outside-root",
                        "symlink points outside the repository; not followed",
                        "copy the file into the repository instead")
                    continue
            yield rel, path, None
        # symlinked directories are not descended (followlinks=False)


def load_tree(root: Path) -> LoadResult:
    """Load every YAML file below ``root`` (or ``root`` itself when it is a file)."""
    result = LoadResult()
    if root.is_file():
        files: Iterable[tuple[str, Path | None, Diagnostic | None]] = [(root.name, root, None)]
    else:
        files = iter_yaml_files(root)
    for rel, path, problem in files:
        if problem is not None:
            result.diagnostics.append(problem)
            continue
        assert path is not None
        try:
            raw = path.read_bytes()
        except OSError as exc:
            result.diagnostics.append(Diagnostic(rel, 1, 1, "unreadable", f"cannot read: {exc}"))
            continue
        result.extend(load_text(rel, raw))
    return result
