"""``pincompile validate``: every check ``compile`` runs, without writing anything."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from pincompile.commands.common import (
    EXIT_INVALID,
    EXIT_OK,
    cache_dir,
    cache_options,
    jobs_option,
    report,
    report_warnings,
)


@click.command()
@click.argument("path", default=".", type=click.Path(exists=True, path_type=Path))
@click.option("-o", "--output", "fmt", type=click.Choice(["human", "json"]), default="human",
              show_default=True, help="human: file:line:column with the offending line; "
              "json: a list of {file, line, column, code, message}.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing when the specs are valid.")
@jobs_option
@cache_options
def validate(path: Path, fmt: str, quiet: bool, jobs: int | None,
             cache_dir_option: Path | None, no_cache: bool) -> None:
    """Check every spec under PATH (default: the current directory).

    Runs everything `compile` runs — schema, references, policy, placement and quota — and
    reports ALL errors, sorted by file and line. Nothing is written.

    \b
    Exit codes: 0 valid, 1 invalid, 2 usage error.
    \b
    Examples:
      pincompile validate examples
      pincompile validate -o json . | jq '.[].message'
      pincompile validate --no-cache .          # load and parse every file again
    """
    started = time.monotonic()
    from pincompile.forked import cpus
    from pincompile.readahead import read_ahead

    cache, jobs = cache_dir(cache_dir_option, no_cache), jobs or cpus()
    read = read_ahead(path, cache, jobs)  # large trees: loaded ahead while the compiler is imported
    from pincompile.pipeline import compile_rendered

    result, rows = compile_rendered(path, fmt=None, revision="validate", cache_dir=cache,
                                    jobs=jobs, read=read)
    report_warnings(result.warnings)
    report(result.diagnostics, result.sources, fmt)
    if fmt == "human" and not result.diagnostics and not quiet:
        n = len(result.catalog.entries)
        click.echo(f"ok: {n} spec{'s' if n != 1 else ''} valid, "
                   f"{len(rows)} objects would be generated "
                   f"({time.monotonic() - started:.2f}s)")
    sys.exit(EXIT_INVALID if result.diagnostics else EXIT_OK)
