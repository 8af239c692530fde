"""Sandboxed string templates: ``"--zone={{ cluster.zone }}"``.

Templates render in a jinja2 :class:`SandboxedEnvironment` with :class:`StrictUndefined`:
no attribute access outside the values given (``app``, ``cluster``, ``platform``, ``job``),
no filesystem (no loader), no imports, bounded ranges and repetition. Any error becomes a
diagnostic located at the string's file and line (for block scalars, the line inside it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from types import TracebackType
from typing import Any

from pincompile.catalog import Entry
from pincompile.diagnostics import Diagnostic, Location

_MARKERS = ("{{", "{%", "{#")


def is_template(text: str) -> bool:
    return "{{" in text or "{%" in text or "{#" in text


_LOOKUP = re.compile(r"\{\{\s*([A-Za-z_]\w*)\.([A-Za-z_]\w*)\s*\}\}")
Parts = tuple[str | tuple[str, str], ...]


@lru_cache(maxsize=8192)
def _simple(source: str) -> Parts | None:
    """A template of only text and ``{{ a.b }}`` lookups of keys (no name a dict has as an
    attribute, such as ``items``), split into its parts (most platform templates are like
    this); ``()`` for text that is no template; None for anything else."""
    if not is_template(source):
        return ()
    parts: list[str | tuple[str, str]] = []
    pos = 0
    for match in _LOOKUP.finditer(source):
        if hasattr(dict, match.group(2)):
            return None
        parts += [source[pos:match.start()], (match.group(1), match.group(2))]
        pos = match.end()
    parts.append(source[pos:])
    texts = [p for p in parts if isinstance(p, str)]
    if "\r" in source or any(m in t for t in texts for m in _MARKERS):
        return None
    return tuple(parts)


def _substitute(parts: Parts, values: Mapping[str, Any]) -> str | None:
    """What jinja would render for a simple template, without its per-render cost; None
    whenever jinja might differ (a missing key, a value that is not text or a number)."""
    out: list[str] = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
            continue
        scope, name = part
        obj = values.get(scope)
        if not isinstance(obj, dict):
            return None
        value = obj.get(name)
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, int) and not isinstance(value, bool):
            out.append(str(value))
        else:
            return None  # missing (or None), or not text or a number
    return "".join(out)


VALUES_HINT = ("templates see app (name, project, kind, namespace, labels), cluster (name, "
               "region, zone, labels), platform (the runtime profile's values) and, in "
               "configTemplates, job")
BUDGET_HINT = ("make the template do less, or raise the budget with the environment variable "
               "named (see docs/concepts.md, Templates)")


class Renderer:
    """Renders strings; errors go to ``report`` as located diagnostics, never raised."""

    def __init__(self, report: Callable[[Diagnostic], None]):
        self.report = report

    def render(self, text: str, values: Mapping[str, Any], entry: Entry[Any],
               path: tuple[str | int, ...]) -> str:
        """``text`` rendered with ``values``; on error the text itself, plus a diagnostic at
        ``entry``'s field ``path``."""
        parts = _simple(text)
        if parts == ():
            return text  # no template
        fast = _substitute(parts, values) if parts is not None else None
        if fast is not None:
            return fast
        from jinja2 import TemplateError, TemplateSyntaxError  # only templates that need it

        from pincompile.expand.sandbox import render_jinja
        from pincompile.template_budget import BudgetExceeded

        try:
            return render_jinja(text, values)
        except BudgetExceeded as exc:
            self._report(entry, path, _template_line(exc.__traceback__),
                         f"template error: {exc}", BUDGET_HINT)
        except TemplateSyntaxError as exc:
            self._report(entry, path, exc.lineno, f"template syntax error: {exc.message}")
        except Exception as exc:  # any failure on user input is a diagnostic, never a crash
            message = exc.message if isinstance(exc, TemplateError) and exc.message else str(exc)
            self._report(entry, path, _template_line(exc.__traceback__),
                         f"template error: {message or type(exc).__name__}")
        return text

    def render_all(self, items: Mapping[str, str], values: Mapping[str, Any], entry: Entry[Any],
                   path: tuple[str | int, ...]) -> dict[str, str]:
        """Render every value of a mapping (e.g. labels); ``path`` leads to the mapping."""
        return {k: self.render(v, values, entry, (*path, k)) for k, v in items.items()}

    def _report(self, entry: Entry[Any], path: tuple[str | int, ...], line: int | None,
                message: str, hint: str = VALUES_HINT) -> None:
        self.report(_locate(entry, path, line).error("template", message, hint))


def _template_line(tb: TracebackType | None) -> int | None:
    """The template line a runtime error happened on (jinja maps its frames to it)."""
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _locate(entry: Entry[Any], path: tuple[str | int, ...], line: int | None) -> Location:
    """Where the template error is: the string's start, or the line inside a block scalar
    (``key: |`` content starts on the next line, indented under the key)."""
    where = entry.at(*path)
    node: Any = entry.doc.data
    for part in path:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return where
    from ruamel.yaml.scalarstring import FoldedScalarString, LiteralScalarString

    if line and isinstance(node, LiteralScalarString | FoldedScalarString):
        # a mapping value is indented under its key; a list item under its indicator
        column = entry.at(*path, key=True).column + 2 if isinstance(path[-1], str) else where.column
        return Location(where.file, where.line + line, column)
    return where
