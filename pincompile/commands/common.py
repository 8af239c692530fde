"""Helpers shared by CLI commands: exit codes, diagnostics output, aligned columns."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from pincompile.diagnostics import Diagnostic, render_human, render_json

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_UNCONVERGED = 1
"""``apply``: a cluster was left different from the specs (conflict, rejected object,
held prune, halted rollout)."""
EXIT_USAGE = 2
EXIT_CLUSTER = 3

OUTPUT_FORMATS = click.Choice(["human", "json"])


def columns(table: Sequence[Sequence[object]], *, gap: str = "  ", indent: str = "",
            width: int | None = None) -> list[str]:
    """The rows of ``table`` (its header first) as aligned lines: every column but the last
    padded to its widest cell, ``gap`` between columns; with ``width`` (a terminal's), a
    longer line is cut to fit it and ends in "..."; trailing blanks dropped."""
    if not table:
        return []
    widths = [max(len(str(r[i])) for r in table) for i in range(len(table[0]) - 1)]
    lines = [indent + gap.join([*(str(c).ljust(w) for c, w in zip(r[:-1], widths, strict=True)),
                                str(r[-1])]) for r in table]
    if width:
        lines = [line if len(line) <= width else line[:max(width - 3, 1)] + "..."
                 for line in lines]
    return [line.rstrip() for line in lines]


def cache_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--cache-dir DIR`` and ``--no-cache``, passed on as ``cache_dir`` (None: no cache)."""
    command = click.option(
        "--no-cache", is_flag=True,
        help="Load and parse every file again; read and write no cache.")(command)
    return click.option(
        "--cache-dir", "cache_dir_option", type=click.Path(file_okay=False, path_type=Path),
        default=None, metavar="DIR", help="Where unchanged files' parsed specs are kept "
        "[default: $XDG_CACHE_HOME/pincompile]. Never inside the spec tree; a corrupt or "
        "foreign cache is ignored.")(command)


jobs_option = click.option(
    "-j", "--jobs", type=click.IntRange(min=1), default=None, metavar="N",
    help="Processes a large tree is compiled in: files loaded, specs checked and objects "
    "expanded side by side; the output does not depend on it  [default: the CPUs available].")
"""``-j N``, passed on as ``jobs`` (None: one process per CPU)."""


def cache_dir(option: Path | None, disabled: bool) -> Path | None:
    """The cache directory to use, from ``--cache-dir`` and ``--no-cache``."""
    from pincompile.source.filecache import default_dir

    return None if disabled else (option or default_dir())


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
