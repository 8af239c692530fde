"""Helpers shared by CLI commands: exit codes, diagnostics output, aligned columns."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click
from click.shell_completion import CompletionItem

from pincompile.diagnostics import Diagnostic, render_human, render_json

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_UNCONVERGED = 1
"""``apply``: a cluster was left different from the specs (conflict, rejected object,
held prune, halted rollout)."""
EXIT_USAGE = 2
EXIT_CLUSTER = 3

OUTPUT_FORMATS: dict[str, str] = {
    "table": "aligned columns that fit the terminal (long cells cut with '…', the least "
             "needed columns left out)",
    "wide": "every column, in full",
    "text": "a report for people",
    "markdown": "a pull-request comment",
    "yaml": "YAML documents",
    "json": "JSON, for tools",
    "csv": "comma-separated rows with a header, for spreadsheets",
    "name": "KIND/PROJECT/NAME, one a line",
}
"""What ``-o`` means in every command: one vocabulary; each command takes the names that
make sense for what it prints."""

F = TypeVar("F", bound=Callable[..., Any])


class Deprecated(str):
    """An ``-o`` value that is not a format: the path an older release took there."""


class OutputFormat(click.ParamType):
    """``-o FORMAT``: one of ``formats``; an alias (an older name) is taken with a note on
    stderr; with ``path_option``, a value that is no format is the path that option now
    takes (a :class:`Deprecated`), also with a note."""

    name = "FORMAT"

    def __init__(self, formats: Sequence[str], aliases: Mapping[str, str] | None = None,
                 path_option: str | None = None) -> None:
        self.formats, self.aliases, self.path_option = list(formats), aliases or {}, path_option

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "|".join(self.formats)

    def shell_complete(self, ctx: click.Context, param: click.Parameter,
                       incomplete: str) -> list[CompletionItem]:
        return [CompletionItem(f) for f in self.formats if f.startswith(incomplete)]

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> str:
        text = str(value)
        if text in self.formats:
            return text
        if text in self.aliases:
            deprecated(f"-o {text}", f"-o {self.aliases[text]}")
            return self.aliases[text]
        if self.path_option is not None:
            deprecated(f"-o {text}", f"{self.path_option} {text}",
                       f"-o now names the output format: {'|'.join(self.formats)}")
            return Deprecated(text)
        self.fail(f"{text!r} is not one of {', '.join(self.formats)}", param, ctx)


def output_option(*formats: str, default: str | None = None,
                  aliases: Mapping[str, str] | None = None, path_option: str | None = None,
                  note: str = "") -> Callable[[F], F]:
    """``-o/--output FORMAT`` (passed on as ``fmt``), its help listing what each of
    ``formats`` prints (:data:`OUTPUT_FORMATS`)."""
    default = default or formats[0]
    meanings = "; ".join(f"{f}: {OUTPUT_FORMATS[f]}" for f in formats)
    return click.option("-o", "--output", "fmt", default=default, show_default=True,
                        type=OutputFormat(formats, aliases, path_option),
                        help=f"Output format. {meanings}.{' ' + note if note else ''}")


def moved_output_option(new: str) -> Callable[[F], F]:
    """A hidden ``-o/--output PATH``, as an older release took it (``-o`` now names an output
    format): passed on as ``moved``, with a note on stderr to use ``new`` instead."""
    def note(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
        if value is not None:
            deprecated(f"-o {value}", f"{new} {value}", "-o names an output format")
        return value

    return click.option("-o", "--output", "moved", default=None, hidden=True, callback=note)


def complete_app_ref(_ctx: click.Context, _param: click.Parameter, incomplete: str
                     ) -> list[CompletionItem]:
    """Shell completion of KIND/PROJECT/NAME: the kinds, as ``KIND/`` (projects and names
    depend on specs or a cluster, which a completion does not load)."""
    from pincompile.models import WORKLOAD_KINDS

    if "/" in incomplete:
        return []
    return [CompletionItem(f"{kind}/", type="plain") for kind in WORKLOAD_KINDS
            if kind.lower().startswith(incomplete.lower())]


def deprecated(old: str, new: str, why: str = "") -> None:
    """One line on stderr: ``old`` still works for this release; use ``new``."""
    click.echo(f"note: {old} is deprecated and will be removed in the next release; use "
               f"{new}{' (' + why + ')' if why else ''}", err=True)


ELLIPSIS = "…"
MIN_CELL = 8
"""A column cut to fit the terminal keeps at least this many characters (or its header)."""
COMFORTABLE_CELL = 24
"""Columns are left out before a cut column would keep fewer characters than this."""


def table_width(fmt: str) -> int | None:
    """The width a table printed as ``fmt`` must fit: ``$COLUMNS`` when set, else the
    terminal's for ``table``; None (no limit) for ``wide``, and when stdout is not a
    terminal (a pipe or a file gets whole lines, as kubectl prints them)."""
    import os
    import shutil

    if fmt != "table":
        return None
    if os.environ.get("COLUMNS", "").isdigit() or sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


def columns(table: Sequence[Sequence[object]], *, gap: str = "  ", indent: str = "",
            width: int | None = None, truncate: Sequence[str] = (),
            drop: Sequence[str] = (), keep: Sequence[str] = ()) -> list[str]:
    """The rows of ``table`` (its header first) as aligned lines: every column but the last
    padded to its widest cell, ``gap`` between columns, trailing blanks dropped.

    With ``width`` (see :func:`table_width`) every line fits it: the columns named in
    ``truncate`` (default: the last one) are cut, widest first, down to :data:`MIN_CELL`,
    a cut cell ending in "…"; the columns named in ``drop`` are left out (those empty in
    every row first, then in that order) before a cut column would keep less than
    :data:`COMFORTABLE_CELL`; then any column is cut, widest first, down to
    :data:`MIN_CELL`; a line still too long is cut. The columns named in ``keep`` (names
    a user copies, such as a pod's) are never cut: a line that does not fit without
    cutting one is left longer than ``width``."""
    if not table:
        return []
    cells = [[str(c) for c in row] for row in table]
    header = cells[0]
    shown = list(range(len(header)))
    widths = {i: _natural(cells, i) for i in shown}
    if width:
        cuttable = {header.index(h) for h in truncate} if truncate else {len(header) - 1}
        room = width - len(indent)
        empty = [h for h in drop if all(row[header.index(h)] in ("", "-") for row in cells[1:])]
        for name in [None, *empty, *(h for h in drop if h not in empty)]:
            if name is not None:
                shown.remove(header.index(name))
            widths = _fit(cells, shown, cuttable, room, len(gap), COMFORTABLE_CELL)
            if _line_length(widths, shown, len(gap)) <= room:
                break
        else:  # no comfortable fit: cut those columns further, then any, to the floor
            kept = {header.index(h) for h in keep}
            widths = _fit(cells, shown, cuttable - kept, room, len(gap), MIN_CELL)
            widths = _fit(cells, shown, set(shown) - kept, room, len(gap), MIN_CELL, widths)
    lines = []
    for row in cells:
        line = indent + gap.join([*(_cut(row[i], widths[i]).ljust(widths[i])
                                    for i in shown[:-1]), _cut(row[shown[-1]], widths[shown[-1]])])
        lines.append((_cut(line, width) if width and not keep else line).rstrip())
    return lines


def _natural(cells: list[list[str]], i: int) -> int:
    return max(len(row[i]) for row in cells)


def _line_length(widths: dict[int, int], shown: list[int], gap: int) -> int:
    return sum(widths[i] for i in shown) + gap * (len(shown) - 1)


def _fit(cells: list[list[str]], shown: list[int], cuttable: set[int], room: int,
         gap: int, floor: int, start: dict[int, int] | None = None) -> dict[int, int]:
    """Each shown column's width (from ``start``, else its widest cell) once the cuttable
    ones are narrowed, widest first (none below ``floor`` or its header), until the line
    fits ``room`` or none can lose more."""
    widths = {i: (start or {}).get(i, _natural(cells, i)) for i in shown}
    floors = {i: max(min(floor, widths[i]), len(cells[0][i])) for i in shown}
    while (over := _line_length(widths, shown, gap) - room) > 0:
        candidates = [i for i in shown if i in cuttable and widths[i] > floors[i]]
        if not candidates:
            break
        widest = max(candidates, key=lambda i: widths[i])
        others = max((widths[i] for i in candidates if i != widest), default=floors[widest])
        widths[widest] -= min(over, widths[widest] - max(others, floors[widest]) or 1)
    return widths


def _cut(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, ending in "…" when cut."""
    return text if len(text) <= width else text[:max(width - 1, 0)] + ELLIPSIS


def cache_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--cache-dir DIR`` and ``--no-cache``, passed on as ``cache_dir`` (None: no cache)."""
    command = click.option(
        "--no-cache", is_flag=True,
        help="Load and parse every file again; read and write no cache.")(command)
    return click.option(
        "--cache-dir", "cache_dir_option", type=click.Path(file_okay=False, path_type=Path),
        default=None, metavar="DIR", help="Where unchanged files' parsed specs are kept "
        "[default: $PINCOMPILE_CACHE, else $XDG_CACHE_HOME/pincompile, else "
        "~/.cache/pincompile]. Never inside the spec tree; a corrupt or "
        "foreign cache is ignored.")(command)


jobs_option = click.option(
    "-j", "--jobs", type=click.IntRange(min=1), default=None, metavar="N",
    help="Processes a large tree is compiled in: files loaded, specs checked and objects "
    "expanded side by side; the output does not depend on it  [default: the CPUs available].")
"""``-j N``, passed on as ``jobs`` (None: one process per CPU)."""


def cache_dir(option: Path | None, disabled: bool) -> Path | None:
    """The cache directory to use, from ``--cache-dir`` and ``--no-cache``."""
    from pincompile.cachedir import cache_root

    return None if disabled else (option or cache_root())


def report(diagnostics: Sequence[Diagnostic], sources: Mapping[str, str], fmt: str,
           *, root_prefix: str = "") -> None:
    """Print diagnostics (human on stderr with source lines, json on stdout)."""
    if fmt == "json":
        click.echo(render_json(diagnostics))
        return
    if diagnostics:
        click.echo(render_human(diagnostics, sources), err=True)
        n = len(diagnostics)
        files = len({d.file for d in diagnostics})
        click.echo(f"\n{n} error{'s' if n != 1 else ''} in {files} file{'s' if files != 1 else ''}",
                   err=True)


def report_warnings(warnings: Sequence[Diagnostic]) -> None:
    """Print located warnings on stderr (they never change the exit code)."""
    for warning in warnings:
        click.echo(f"{warning.location()}: warning[{warning.code}]: {warning.message}", err=True)


def require_specs(specs: int, diagnostics: Sequence[Diagnostic], path: Path) -> None:
    """Exit 2 when ``path`` holds no spec at all (a mistyped or empty folder passes
    nothing off as valid); a tree whose only specs are invalid is left to the errors."""
    if specs == 0 and not diagnostics:
        fail(f"no specs under {path}: no .yaml or .yml file there holds a pincompute.io "
             "document")


def fail(message: str, code: int = EXIT_USAGE) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def write_atomically(path: Path, text: str) -> None:
    """Replace (or create) ``path`` with ``text`` atomically, keeping its permissions."""
    import os
    import tempfile

    mode = path.stat().st_mode & 0o7777 if path.exists() else 0o644
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
