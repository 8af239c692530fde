"""Helpers shared by CLI commands: exit codes, diagnostics output."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

import click

from pincompile.diagnostics import Diagnostic, render_human, render_json

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_USAGE = 2
EXIT_CLUSTER = 3

OUTPUT_FORMATS = click.Choice(["human", "json"])


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


def fail(message: str, code: int = EXIT_USAGE) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)
