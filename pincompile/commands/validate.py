"""``pincompile validate``: every check ``compile`` runs, without writing anything."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pincompile.commands.common import (
    EXIT_INVALID,
    EXIT_OK,
    cache_dir,
    cache_options,
    jobs_option,
    output_option,
    report,
    report_warnings,
    require_specs,
)

if TYPE_CHECKING:
    from pincompile.compiler import Validation


@click.command()
@click.argument("path", default=".", type=click.Path(exists=True, path_type=Path))
@output_option("text", "json", aliases={"human": "text"},
               note="text: file:line:column with the offending line; json: a list of "
               "{file, line, column, code, message}.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing when the specs are valid.")
@jobs_option
@cache_options
def validate(path: Path, fmt: str, quiet: bool, jobs: int | None,
             cache_dir_option: Path | None, no_cache: bool) -> None:
    """Check every spec under PATH (default: the current directory).

    Runs everything `compile` runs — schema, references, policy, placement and quota — and
    reports ALL errors, sorted by file and line. Nothing is written.

    With the cache (see --cache-dir), files whose content did not change since an earlier
    run are not parsed again, and when only app files changed since the last valid run of
    PATH, only those apps (and the PinScalers linked to them) are checked again; the
    errors are the same either way.

    \b
    Exit codes: 0 valid, 1 invalid, 2 usage error (also: no specs under PATH).
    \b
    Examples:
      pincompile validate examples
      pincompile validate -o json . | jq '.[].message'
      pincompile validate --no-cache .          # load and parse every file again
    """
    started = time.monotonic()
    from pincompile.forked import cpus

    cache, jobs = cache_dir(cache_dir_option, no_cache), jobs or cpus()
    scanning = None
    if jobs > 1:  # PATH is walked in a forked process while the compiler is imported
        from pincompile.source.treescan import scan_ahead

        scanning = scan_ahead(path, cache)
    from pincompile.compiler import validate_tree

    done = validate_tree(path, cache_dir=cache, jobs=jobs, scanning=scanning)
    result = done.result
    report_warnings(result.warnings)
    require_specs(done.specs, result.diagnostics, path)
    survives = _loss_check(path, done, cache, jobs)
    report(result.diagnostics, result.sources, fmt)
    if fmt == "text" and not result.diagnostics and not quiet:
        click.echo(f"ok: {done.specs} spec{'s' if done.specs != 1 else ''} valid, "
                   f"{done.objects} objects would be generated{survives} "
                   f"({time.monotonic() - started:.2f}s)")
    sys.exit(EXIT_INVALID if result.diagnostics else EXIT_OK)


def _loss_check(path: Path, done: Validation, cache: Path | None, jobs: int) -> str:
    """With ``survive`` in ``pincompile.yaml`` and valid specs, the loss check: its errors
    join ``done``'s; what it found to be true, for the ok line."""
    from pincompile.repoconfig import CONFIG_FILE

    config = path / CONFIG_FILE
    if done.result.diagnostics or not config.is_file():
        return ""
    from pincompile.capacity import survive_rule, tree_check

    rule = survive_rule({CONFIG_FILE: config.read_text(errors="replace")})
    if rule is None:
        return ""
    problems = tree_check(path, done.result, rule, cache, jobs)
    if problems:
        done.result.diagnostics.extend(problems)
        for name in {d.file for d in problems} - set(done.result.sources):
            done.result.sources[name] = (path / name).read_text(errors="replace")
        return ""
    return f"; it survives the loss of any one {rule.lose} for {', '.join(rule.tiers)} workloads"
