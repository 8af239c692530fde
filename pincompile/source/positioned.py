"""Loaded YAML that remembers where every key and value stands in its file.

Both loaders (libyaml's, fast, in :mod:`pincompile.source.loader_c`; ruamel's, the slow reference
and the fallback for anything unusual, in :mod:`pincompile.source.loader_ruamel`) build the same
containers: :class:`YamlMap` (a ``dict``) and :class:`YamlSeq` (a ``list``), each carrying
the 1-based positions :func:`locate` reports. They pickle, so the compile cache can keep
them.

A compile asks for positions only to report a problem, so the fast loader usually builds
plain ``dict`` and ``list`` data (cheaper to build, to pickle between processes and to
cache) and gives its :class:`Document` a :class:`Positions` source that builds the
positioned data of that document when a location is first asked for.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from pincompile.diagnostics import Diagnostic, Location

PathKey = tuple[str | int, ...]
#: (key line, key column, value line, value column), all 1-based.
KeyValuePos = tuple[int, int, int, int]


class YamlMap(dict[Any, Any]):
    """A mapping with the position of itself, of each key and of each value."""

    __slots__ = ("col", "line", "pos")

    def __init__(self, line: int = 1, col: int = 1) -> None:
        super().__init__()
        self.line = line
        self.col = col
        self.pos: dict[Any, KeyValuePos] = {}


class YamlSeq(list[Any]):
    """A sequence with the position of itself and of each item."""

    __slots__ = ("col", "line", "pos")

    def __init__(self, line: int = 1, col: int = 1) -> None:
        super().__init__()
        self.line = line
        self.col = col
        self.pos: list[tuple[int, int]] = []


class Positions(Protocol):
    """Where a document without positions gets them: its data as positioned containers."""

    def positioned(self, index: int) -> Any:
        """Document ``index`` of the file, loaded with positions."""


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
    positions: Positions | None = field(default=None, compare=False, repr=False)
    """Where the positions of ``data`` are found when it has none (plain containers)."""

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
        data = self.data if self.positions is None else self.positions.positioned(self.index)
        return locate(self.file, data, tuple(path), key=key, default=self.start)


def locate(
    file: str, data: Any, path: PathKey, *, key: bool = False, default: Location | None = None
) -> Location:
    """The 1-based line and column of ``path`` (or of its last key) inside loaded data."""
    best = default or Location(file)
    node = data
    for depth, part in enumerate(path):
        try:
            if isinstance(node, YamlMap) and part in node:
                where = node.pos[part]
                if key and depth == len(path) - 1:
                    best = Location(file, where[0], where[1])
                else:
                    best = Location(file, where[2], where[3])
            elif isinstance(node, YamlSeq) and isinstance(part, int) and 0 <= part < len(node):
                line, col = node.pos[part]
                best = Location(file, line, col)
            else:
                break
            node = node[part]
        except (KeyError, IndexError, TypeError):
            break
    return best
