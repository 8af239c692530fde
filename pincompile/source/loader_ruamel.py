"""The reference loader: ruamel.yaml's pure-Python round-trip parser.

Slow (bench/RESULTS.md, "Tuning") but the yardstick for the libyaml loader in
:mod:`pincompile.source.loader_c`: whatever that one does not handle itself (a syntax error, a
duplicate key, an alias bomb, a YAML tag, a ``%YAML`` directive, a merge key, a complex key)
is loaded here instead, so messages and meanings stay exactly as ruamel gives them. The
property test in ``tests/pincompile/source/test_loader_c.py`` compares both on generated YAML.
"""

from __future__ import annotations

from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.constructor import DuplicateKeyError
from ruamel.yaml.docinfo import DocInfo, version
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from ruamel.yaml.tag import Tag

from pincompile.diagnostics import Diagnostic
from pincompile.source.positioned import Document, YamlMap, YamlSeq

#: How many nodes a document may have once its aliases are expanded.
MAX_EXPANDED_NODES = 200_000
#: How many bytes of scalars (keys and values) a document may hold once its aliases are
#: expanded, unless its file is larger: aliases may never make a document bigger than this
#: or than the file it is written in. Bounds what one alias to a long string repeats.
MAX_EXPANDED_BYTES = 4 * 2**20
#: The most characters an integer may have: Python reads no more than 4,300 decimal digits,
#: and a 4,000-digit hexadecimal number cannot be printed; no field holds more than 20.
MAX_INT_DIGITS = 1000
#: Explicit tags a spec may use; others (``!!python/...``, ``!!set``, ``!custom``, and
#: ``!!str``, which round-trip loading keeps as a tagged scalar) build values no field holds.
ALLOWED_TAGS = frozenset({"!!int", "!!float", "!!bool", "!!null", "!!map", "!!seq"})


def _new_yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    return yaml


def byte_limit(text: str) -> int:
    """The most bytes of scalars a document of ``text`` may expand to."""
    return max(MAX_EXPANDED_BYTES, len(text))


def too_large(file: str, line: int, column: int, nodes: int, size: int, limit: int
              ) -> Diagnostic:
    """The error for a document whose aliases expand past a limit (``nodes`` or ``size``
    bytes, at most ``limit`` bytes allowed)."""
    if nodes > MAX_EXPANDED_NODES:
        return Diagnostic(file, line, column, "alias-bomb",
                          f"document expands to more than {MAX_EXPANDED_NODES} nodes through "
                          "YAML aliases; refused", "avoid deeply nested anchors and aliases")
    return Diagnostic(file, line, column, "alias-bomb",
                      f"document expands to more than {limit} bytes through YAML aliases; "
                      "refused", "write a long value once instead of repeating it by alias")


def expanded_size(node: Any, memo: dict[int, tuple[int, int]], limit: int,
                  byte_limit: int = MAX_EXPANDED_BYTES) -> tuple[int, int]:
    """(nodes, bytes of scalars) in ``node`` with aliases expanded, computed in linear time
    (memoised by id); stops counting once past ``limit`` nodes or ``byte_limit`` bytes."""
    cached = memo.get(id(node))
    if cached is not None:
        return cached
    memo[id(node)] = (1, 0)  # guards against recursive aliases
    total, size = 1, 0
    if isinstance(node, SequenceNode | MappingNode):
        children = (node.value if isinstance(node, SequenceNode)
                    else [n for pair in node.value for n in pair])
        for child in children:
            nodes, more = expanded_size(child, memo, limit, byte_limit)
            total, size = total + nodes, size + more
            if total > limit or size > byte_limit:
                break
    elif isinstance(node.value, str):
        size = len(node.value)
    memo[id(node)] = (total, size)
    return total, size


def _explicit_tag(node: Node) -> str | None:
    """The tag as written (``!!set``, ``!x``), or None when the tag was resolved implicitly."""
    ctag = getattr(node, "ctag", None)
    handle = getattr(ctag, "handle", None)
    return None if handle is None else f"{handle}{getattr(ctag, 'suffix', '')}"


_INT_TAG = "tag:yaml.org,2002:int"
#: What ruamel raises, besides YAMLError, on odd input.
_CONSTRUCT_ERRORS = (ValueError, TypeError, OverflowError, LookupError, AttributeError,
                     AssertionError)
#: What a node with a refused tag is read as instead: the plain value of its kind.
_PLAIN_TAGS = {ScalarNode: "tag:yaml.org,2002:str", SequenceNode: "tag:yaml.org,2002:seq",
               MappingNode: "tag:yaml.org,2002:map"}


def _refuse(file: str, node: Node, code: str, message: str, hint: str) -> Diagnostic:
    """``node`` is read as a plain string, map or list instead; the error says why."""
    node.tag = Tag(suffix=_PLAIN_TAGS[type(node)])
    mark = node.start_mark
    return Diagnostic(file, mark.line + 1, mark.column + 1, code, message, hint)


def refused_values(file: str, node: Node, seen: set[int]) -> list[Diagnostic]:
    """Errors for the values of ``node`` that no spec field holds, each node visited once:
    an explicit tag outside ``ALLOWED_TAGS``, an integer of more than ``MAX_INT_DIGITS``
    characters. Such a node is read as a plain string, map or list, so the document still
    loads and the error is reported where it stands."""
    if id(node) in seen:
        return []
    seen.add(id(node))
    found = []
    tag = _explicit_tag(node)
    if tag not in (None, *ALLOWED_TAGS):
        found.append(_refuse(
            file, node, "yaml-tag", f"YAML tag '{tag}' is not supported in specs",
            "remove the tag: specs use plain YAML values (quote a string)"))
    elif node.tag == _INT_TAG and len(node.value) > MAX_INT_DIGITS:
        found.append(_refuse(
            file, node, "yaml-number", f"integer of {len(node.value)} characters; the limit "
            f"is {MAX_INT_DIGITS}", "no field holds a number this large"))
    if isinstance(node, SequenceNode):
        for child in node.value:
            found += refused_values(file, child, seen)
    elif isinstance(node, MappingNode):
        for pair in node.value:
            for child in pair:
                found += refused_values(file, child, seen)
    return found


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


def positioned(data: Any, memo: dict[int, Any] | None = None) -> Any:
    """ruamel round-trip data as :class:`YamlMap` / :class:`YamlSeq` with the positions
    ruamel recorded (aliases stay shared; scalars are kept as ruamel built them)."""
    memo = {} if memo is None else memo
    if not isinstance(data, CommentedMap | CommentedSeq):
        return data
    done = memo.get(id(data))
    if done is not None:
        return done
    line, col = data.lc.line, data.lc.col
    start = (line + 1 if line is not None else 1, col + 1 if col is not None else 1)
    if isinstance(data, CommentedSeq):
        seq = YamlSeq(*start)
        memo[id(data)] = seq
        for i, item in enumerate(data):
            seq.append(positioned(item, memo))
            at = data.lc.data.get(i)
            seq.pos.append((at[0] + 1, at[1] + 1) if at else start)
        return seq
    mapping = YamlMap(*start)
    memo[id(data)] = mapping
    for k, child in data.items():
        mapping[k] = positioned(child, memo)
        at = data.lc.data.get(k)
        if at is None:  # a key merged in with <<: point at the mapping
            mapping.pos[k] = (*start, *start)
            continue
        vline, vcol = at[2], at[3]
        if (isinstance(child, CommentedMap | CommentedSeq) and child.lc.line is not None
                and (not child or child.fa.flow_style())):
            vline, vcol = child.lc.line, child.lc.col
        mapping.pos[k] = (at[0] + 1, at[1] + 1, vline + 1, vcol + 1)
    return mapping


def load_documents(file: str, text: str) -> tuple[list[Document], Diagnostic | None, bool]:
    """Parse ``text``: (documents, problem, always) — ``always`` is True when the problem
    is reported whatever the file is (an alias bomb), False when only for specs."""
    documents: list[Document] = []
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
                mark = node.start_mark
                limit = byte_limit(text)
                nodes, size = expanded_size(node, {}, MAX_EXPANDED_NODES, limit)
                if nodes > MAX_EXPANDED_NODES or size > limit:
                    return documents, too_large(file, mark.line + 1, mark.column + 1, nodes,
                                                size, limit), True
                refused = refused_values(file, node, set())
                try:
                    data = constructor.construct_document(node)
                except _CONSTRUCT_ERRORS as exc:  # '!!int abc' and other ruamel edge cases
                    return documents, Diagnostic(file, mark.line + 1, mark.column + 1,
                                                 "yaml-syntax", f"invalid YAML: {exc}"), False
                if data is not None:
                    doc = Document(file, index, positioned(data), mark.line + 1,
                                   mark.column + 1, problems=refused)
                    documents.append(doc)
                index += 1
                yaml.doc_infos.append(DocInfo(requested_version=version(yaml.version)))
        finally:
            parser.dispose()
    except YAMLError as exc:
        return documents, _yaml_error(file, exc), False
    except RecursionError:
        return documents, Diagnostic(file, 1, 1, "yaml-too-deep", "YAML nesting is too deep"), False
    except _CONSTRUCT_ERRORS as exc:  # ruamel edge cases: never a traceback for odd input
        return documents, Diagnostic(file, 1, 1, "yaml-syntax", f"invalid YAML: {exc}"), False
    return documents, None, False
