"""Located diagnostics: every user-facing error names file, line and column."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One user error, located at ``file:line:column`` (1-based)."""

    file: str
    line: int
    column: int
    code: str
    message: str
    hint: str | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        if self.hint is None:
            data.pop("hint")
        return data

    def location(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True)
class Location:
    """Where something stands in the source tree (1-based line and column)."""

    file: str
    line: int = 1
    column: int = 1

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"

    def error(self, code: str, message: str, hint: str | None = None) -> Diagnostic:
        return Diagnostic(self.file, self.line, self.column, code, message, hint)


class CompileError(Exception):
    """Raised when inputs are invalid; carries every diagnostic found."""

    def __init__(self, diagnostics: Iterable[Diagnostic]):
        self.diagnostics = sorted(set(diagnostics))
        super().__init__(f"{len(self.diagnostics)} error(s)")


def render_human(
    diagnostics: Iterable[Diagnostic], sources: Mapping[str, str] | None = None
) -> str:
    """Render diagnostics like a compiler: location, message, offending line, caret."""
    out: list[str] = []
    cache: dict[str, list[str]] = {}
    for diag in diagnostics:
        out.append(f"{diag.location()}: error[{diag.code}]: {diag.message}")
        text = (sources or {}).get(diag.file)
        if text is not None:
            lines = cache.setdefault(diag.file, text.splitlines())
            if 1 <= diag.line <= len(lines):
                src = lines[diag.line - 1].replace("\t", " ")
                gutter = f"{diag.line:>5} | "
                out.append(gutter + src)
                out.append(" " * (len(gutter) + max(diag.column - 1, 0)) + "^")
        if diag.hint:
            out.append(f"  hint: {diag.hint}")
    return "\n".join(out)


def render_json(diagnostics: Iterable[Diagnostic]) -> str:
    return json.dumps([d.to_dict() for d in diagnostics], indent=2)


def add_new(found: list[Diagnostic], more: Iterable[Diagnostic]) -> None:
    """Add a stage's diagnostics to ``found``, except at places an earlier stage already
    reported (there, the earlier stage's message is kept)."""
    taken = {(d.file, d.line, d.column) for d in found}
    found.extend(d for d in more if (d.file, d.line, d.column) not in taken)
