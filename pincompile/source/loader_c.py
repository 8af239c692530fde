"""The fast loader: libyaml (PyYAML's ``CSafeLoader``) composes, one walk builds.

libyaml parses the text into nodes that carry their start marks; one walk over those nodes
builds :class:`~pincompile.source.positioned.YamlMap` / ``YamlSeq`` with positions. Scalars mean
what the reference loader (ruamel.yaml, YAML 1.2) makes of them: the walk asks ruamel's own
resolver and constructor, once per distinct plain scalar (most start with a letter and are
plain strings without asking).

Whatever is unusual — a syntax error, a duplicate or merge key, a complex key, an explicit
tag, a ``%`` directive, a very long integer, characters YAML readers disagree on — raises
:class:`Unusual`, and the caller loads that file with the reference loader instead, so
every message stays exactly as before. A document whose aliases expand past the limits of
:mod:`pincompile.source.loader_ruamel` raises :class:`Refused` with the same error that loader
gives (reading a bomb of megabytes slowly would be a bomb of its own).
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.nodes import ScalarNode as RuamelScalar

from pincompile.diagnostics import Diagnostic
from pincompile.source.loader_ruamel import MAX_INT_DIGITS, byte_limit, too_large
from pincompile.source.positioned import Document, YamlMap, YamlSeq

_PLAIN = "?plain"
_TAGGED = "?tagged"  # the non-specific tag '!'

_QUOTED = "?quoted"
_SEQ = "?seq"
_MAP = "?map"
_STR_TAG = "tag:yaml.org,2002:str"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_INT_TAG = "tag:yaml.org,2002:int"
_SAFE_TAGS = frozenset({_STR_TAG, "tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
                        "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null",
                        "tag:yaml.org,2002:timestamp"})
#: Text that goes to the reference loader: directives (``%YAML 1.1`` changes what scalars
#: mean); what libyaml reads but ruamel refuses (tabs, ``|#``, an anchor name followed by an
#: indicator); characters outside YAML's printable set; line breaks other than \n and \r.
_UNUSUAL_TEXT = re.compile(
    r"^%|^[ ]*(?:---[ ]*)?[|>]|[|>][-+1-9]{0,2}#|&[\w-]*[^\w\s-]|"
    "[^\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]|[\u2028\u2029]",
    re.MULTILINE)
_CACHE_LIMIT = 1 << 18


class Unusual(Exception):
    """This text needs the reference loader (``mark``: where, when known; ``key``: the
    duplicate key)."""

    def __init__(self, reason: str, mark: Any = None, key: Any = None) -> None:
        super().__init__(reason)
        self.mark, self.key = mark, key


class Refused(Exception):
    """A document expands past a limit through aliases: the error, and the documents of
    the file before it (the reference loader would say the same, only slower)."""

    def __init__(self, problem: Diagnostic, documents: list[Document]) -> None:
        super().__init__(problem.message)
        self.problem, self.documents = problem, documents


class _TooLarge(Exception):
    """Raised by :class:`_Builder` past a limit."""


class _Composer(yaml.CSafeLoader):  # type: ignore[misc,name-defined]
    """libyaml's composer with resolution left to us: implicit tags become markers."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        if kind is yaml.ScalarNode:
            return _PLAIN if implicit[0] else _QUOTED if implicit[1] else _TAGGED
        if not implicit:
            return _TAGGED
        return _SEQ if kind is yaml.SequenceNode else _MAP


class _Scalars:
    """Plain scalars as ruamel.yaml's round-trip loader (YAML 1.2) reads them."""

    def __init__(self) -> None:
        reference = YAML(typ="rt")
        self.resolver = reference.resolver
        self.constructor = reference.constructor
        table = self.resolver.versioned_resolver
        # First characters for which some implicit resolver exists (else: a string).
        self.first = frozenset(ch for ch in table if ch is not None)
        self.any_first = bool(table.get(None))
        self.cache: dict[str, Any] = {}

    def plain(self, value: str) -> Any:
        if not self.any_first and value and value[0] not in self.first:
            return value
        try:
            return self.cache[value]
        except KeyError:
            pass
        tag = str(self.resolver.resolve(RuamelScalar, value, (True, False)))
        if tag == _STR_TAG:
            built: Any = value
        elif tag in _SAFE_TAGS:
            if tag == _INT_TAG and len(value) > MAX_INT_DIGITS:
                raise Unusual("long integer")
            built = self._construct(tag, value, None)
        else:
            raise Unusual(tag)  # merge key, '=' value, ...
        if len(self.cache) > _CACHE_LIMIT:
            self.cache.clear()
        self.cache[value] = built
        return built

    def block(self, value: str, style: str) -> Any:
        """A ``|`` or ``>`` block: ruamel's string types (templates point inside them)."""
        return self._construct(_STR_TAG, value, style)

    def _construct(self, tag: str, value: str, style: str | None) -> Any:
        from ruamel.yaml.tag import Tag

        node = RuamelScalar(Tag(suffix=tag), value, style=style)
        return self.constructor.construct_non_recursive_object(node)


_SCALARS: _Scalars | None = None


def _scalars() -> _Scalars:
    global _SCALARS
    if _SCALARS is None:
        _SCALARS = _Scalars()
    return _SCALARS


class _Builder:
    """One document's nodes → data (positioned, or plain ``dict`` and ``list`` without
    ``positions``), counting nodes and bytes of scalars with aliases expanded."""

    def __init__(self, limit: int, byte_limit: int | None, positions: bool) -> None:
        """``byte_limit``: None for text without aliases, whose scalars can add up to no
        more than its own size (their bytes are then not counted: the common case, fast)."""
        self.scalars = _scalars()
        self.limit = limit
        self.byte_limit = byte_limit if byte_limit is not None else 0
        self.positions = positions
        self.memo: dict[int, tuple[Any, int, int]] = {}
        self.size = 0
        self.bytes = 0
        if byte_limit is not None:
            self.scalar = self.counted_scalar  # type: ignore[method-assign]

    def build(self, node: Any) -> tuple[Any, int]:
        """(value, expanded node count) of ``node``."""
        if type(node) is yaml.ScalarNode:
            return self.scalar(node), 1
        done = self.memo.get(id(node))
        if done is not None:
            self.size += done[1]
            self.bytes += done[2]
            if self.size > self.limit or self.bytes > self.byte_limit:
                raise _TooLarge
            return done[0], done[1]
        total = 1
        bytes_before = self.bytes
        self.size += 1
        if node.tag == _MAP:
            mapping: dict[Any, Any] = {}
            pos = None
            if self.positions:
                mark = node.start_mark
                mapping = YamlMap(mark.line + 1, mark.column + 1)
                pos = mapping.pos
            self.memo[id(node)] = (mapping, 1, 0)  # a recursive alias
            for knode, vnode in node.value:
                if type(knode) is not yaml.ScalarNode:
                    raise Unusual("complex key")
                key = self.scalar(knode)
                if key in mapping:
                    raise Unusual("duplicate key", knode.start_mark, key)
                value, size = self.build(vnode)
                mapping[key] = value
                if pos is not None:
                    kmark, vmark = knode.start_mark, vnode.start_mark
                    pos[key] = (kmark.line + 1, kmark.column + 1, vmark.line + 1,
                                vmark.column + 1)
                total += 1 + size
            built: Any = mapping
        elif node.tag == _SEQ:
            seq: list[Any] = []
            at = None
            if self.positions:
                mark = node.start_mark
                seq = YamlSeq(mark.line + 1, mark.column + 1)
                at = seq.pos
            self.memo[id(node)] = (seq, 1, 0)
            for item in node.value:
                value, size = self.build(item)
                seq.append(value)
                if at is not None:
                    imark = item.start_mark
                    at.append((imark.line + 1, imark.column + 1))
                total += size
            built = seq
        else:
            raise Unusual(f"tag {node.tag}")
        self.memo[id(node)] = (built, total, self.bytes - bytes_before)
        return built, total

    def counted_scalar(self, node: Any) -> Any:
        """:meth:`scalar`, counting its bytes (text with aliases: see :meth:`__init__`)."""
        self.bytes += len(node.value)
        if self.bytes > self.byte_limit:
            raise _TooLarge
        return _Builder.scalar(self, node)

    def scalar(self, node: Any) -> Any:
        self.size += 1
        if self.size > self.limit:
            raise _TooLarge
        tag = node.tag
        if tag == _PLAIN:
            if not node.value:  # ruamel places an empty value at the next token: its quirk
                raise Unusual("empty value")
            return self.scalars.plain(node.value)
        if tag != _QUOTED:
            raise Unusual(f"tag {tag}")
        style = node.style
        if style == "|" or style == ">":
            return self.scalars.block(node.value, style)
        return node.value


def unusual_text(text: str) -> bool:
    """Whether ``text`` goes to the reference loader without trying libyaml."""
    return _UNUSUAL_TEXT.search(text) is not None


def load_documents(file: str, text: str, max_nodes: int, *, positions: bool = True
                   ) -> list[Document]:
    """Every non-empty document of ``text``; raises :class:`Unusual` for the reference loader.

    Without ``positions`` the data is plain ``dict`` and ``list``, and each document finds
    its positions in ``text`` when a location is asked for (see :class:`Reload`)."""
    if unusual_text(text):
        raise Unusual("text")
    documents: list[Document] = []
    reload = None if positions else Reload(file, text, max_nodes)
    limit = byte_limit(text) if "*" in text else None  # an alias needs a '*'
    composer = _Composer(text)
    try:
        index = 0
        while composer.check_node():
            node = composer.get_node()
            if node is None:
                continue
            try:
                empty = type(node) is yaml.ScalarNode and node.tag == _PLAIN and not node.value
                if empty:
                    data = None
                else:
                    builder = _Builder(max_nodes, limit, positions)
                    data = builder.build(node)[0]
            except RecursionError as exc:
                raise Unusual("deep") from exc
            except _TooLarge:
                mark = node.start_mark
                raise Refused(too_large(file, mark.line + 1, mark.column + 1, builder.size,
                                        builder.bytes, limit or byte_limit(text)),
                               documents) from None
            if data is not None:
                mark = node.start_mark
                documents.append(Document(file, index, data, mark.line + 1, mark.column + 1,
                                          positions=reload))
            index += 1
    except yaml.YAMLError as exc:
        raise Unusual("syntax") from exc
    finally:
        composer.dispose()
    return documents


class Reload:
    """The positions of a file loaded without them: the file is loaded again, with
    positions, when one of its documents is first asked for a location."""

    __slots__ = ("_documents", "file", "max_nodes", "text")

    def __init__(self, file: str, text: str, max_nodes: int) -> None:
        self.file, self.text, self.max_nodes = file, text, max_nodes
        self._documents: dict[int, Any] | None = None

    def positioned(self, index: int) -> Any:
        if self._documents is None:
            self._documents = {d.index: d.data for d in
                               load_documents(self.file, self.text, self.max_nodes)}
        return self._documents[index]

    def __reduce__(self) -> tuple[Any, ...]:  # what was loaded again is not kept
        return Reload, (self.file, self.text, self.max_nodes)
