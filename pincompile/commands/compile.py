"""``pincompile compile``: write every member cluster's manifests."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pincompile.commands.common import (
    EXIT_INVALID,
    EXIT_OK,
    EXIT_USAGE,
    Deprecated,
    cache_dir,
    cache_options,
    deprecated,
    fail,
    jobs_option,
    output_option,
    report_warnings,
    require_specs,
)
from pincompile.commands.common import report as report_diagnostics
from pincompile.emit.output import (
    FORMATS,
    PLACEMENT_FILE,
    OutputError,
    check_output_dir,
    stream_parts,
    to_json,
    write_tree,
)
from pincompile.forked import cpus

if TYPE_CHECKING:
    from pincompile.emit.parallel import Row
    from pincompile.forked import Forked
    from pincompile.pipeline import Result
    from pincompile.source.readahead import ReadTree
    from pincompile.source.treescan import Scan


@click.command("compile")
@click.argument("root", default=".", type=click.Path(exists=True, path_type=Path))
@click.option("--out-dir", "out_dir", default=None, metavar="DIR",
              help="Directory to write (replaced as a whole); '-' or none: one stream of "
              "every object on stdout.")
@output_option("yaml", "json", path_option="--out-dir",
               note="json also prints errors as JSON on stdout. (An older release took "
               "-o DIR for --out-dir DIR: still accepted, with a note.)")
@click.option("--cluster", "clusters", multiple=True, metavar="NAME",
              help="Only this member cluster (repeatable).")
@click.option("--format", "legacy_format", type=click.Choice(FORMATS), default=None,
              hidden=True, help="Deprecated: -o yaml|json.")
@click.option("--revision", default=None,
              help="Git revision recorded in pincompute.io/revision (default: ROOT's HEAD).")
@click.option("--errors", "legacy_errors", type=click.Choice(["human", "json"]), default=None,
              hidden=True, help="Deprecated: -o json prints errors as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="No progress on stderr.")
@jobs_option
@cache_options
def compile_cmd(root: Path, out_dir: str | None, fmt: str, clusters: tuple[str, ...],
                legacy_format: str | None, revision: str | None, legacy_errors: str | None,
                quiet: bool, jobs: int | None, cache_dir_option: Path | None,
                no_cache: bool) -> None:
    """Compile the specs under ROOT (default: .) into native Kubernetes manifests.

    \b
    With --out-dir DIR, writes DIR/<cluster>/<namespace or _cluster>/<kind>-<name>.yaml
    for every object, and DIR/placement.json: for every workload its eligible clusters,
    scores, replicas per cluster and zone, and why every other cluster was filtered out.
    Without it, prints every object as one stream on stdout.

    Files whose content did not change since an earlier run are not loaded and parsed
    again: their specs come from the cache (see --cache-dir). When only app files changed
    since the last clean compile into DIR at the same revision (every object records it,
    so a new commit compiles everything), only those apps (and the PinScalers linked to
    them) are checked, placed and expanded again, and only output files whose bytes change
    are rewritten; any change to clusters, projects, sidecars or the runtime profile
    compiles everything. The output is the same bytes either way.

    DIR is replaced atomically as a whole (or, incrementally, file by file), so files of
    objects that no longer exist do not linger; pincompile only replaces a directory it
    wrote (or an empty one). Nothing is written when any error is found. The same input
    gives the same bytes.

    \b
    Exit codes: 0 written, 1 invalid specs (errors on stderr; with -o json on stdout),
    2 usage error (also: no specs under ROOT; nothing is written).
    \b
    Examples:
      pincompile compile examples --out-dir out/
      pincompile compile . --cluster use1a-general-01 | kubectl diff -f -
      pincompile compile . -o json | jq '.items[].kind'
    """
    fmt, output, errors_fmt = _legacy_output(fmt, out_dir, legacy_format, legacy_errors)
    started = time.monotonic()
    to_stdout = output == "-"
    out = Path(output)
    if not to_stdout:
        _check(out)
    if not quiet and sys.stderr.isatty():
        click.echo(f"compiling {root} ...", err=True)
    cache = cache_dir(cache_dir_option, no_cache)
    jobs = jobs or cpus()
    scanning, read = _read_ahead(root, cache, jobs, to_folder=not to_stdout and not clusters)
    from pincompile.emit.folder import compile_rendered

    rows: list[Row] = []
    if not to_stdout and not clusters:
        result = _compile_folder(root, out, fmt, revision, cache, jobs, scanning, read,
                                 quiet, started)
    else:
        result, rows = compile_rendered(root, fmt=fmt, revision=revision, cache_dir=cache,
                                        jobs=jobs, read=read)
        require_specs(len(result.catalog.entries), result.diagnostics, root)
    report_warnings(result.warnings)
    if result.diagnostics:
        report_diagnostics(result.diagnostics, result.sources, errors_fmt)
        if not quiet and errors_fmt != "json":
            click.echo("nothing written", err=True)
        sys.exit(EXIT_INVALID)
    _write_clusters(result, rows, clusters, fmt, out, to_stdout, quiet, started)


def _legacy_output(fmt: str, out_dir: str | None, legacy_format: str | None,
                   legacy_errors: str | None) -> tuple[str, str, str]:
    """(manifest format, DIR or '-', error format) from -o and --out-dir, and from the
    options an older release took (-o DIR, --format, --errors), each with a note."""
    if isinstance(fmt, Deprecated):
        if out_dir is not None:
            fail(f"-o {fmt} and --out-dir {out_dir}: give the directory once, as --out-dir")
        out_dir, fmt = str(fmt), "yaml"
    if legacy_format is not None:
        deprecated(f"--format {legacy_format}", f"-o {legacy_format}")
        fmt = legacy_format
    errors_fmt = "json" if fmt == "json" else "text"
    if legacy_errors is not None:
        deprecated(f"--errors {legacy_errors}",
                   "-o json" if legacy_errors == "json" else "-o yaml",
                   "-o json prints errors as JSON too")
        errors_fmt = legacy_errors
    return fmt, out_dir or "-", errors_fmt


def _read_ahead(root: Path, cache: Path | None, jobs: int,
                to_folder: bool) -> tuple[Forked[Scan] | None, ReadTree | None]:
    """Start walking ROOT (and, when large, loading it) in a forked process while this one
    imports the compiler; with a cache, --out-dir DIR walks it by stat first (unchanged files are
    not even read) and loads what changed after the import. (scanning, read)."""
    if to_folder and jobs > 1 and cache is not None:
        from pincompile.source.treescan import scan_ahead

        return scan_ahead(root, cache), None
    if not to_folder or cache is None:
        from pincompile.source.readahead import read_ahead

        return None, read_ahead(root, cache, jobs)
    return None, None


def _compile_folder(root: Path, out: Path, fmt: str, revision: str | None,
                    cache: Path | None, jobs: int, scanning: Forked[Scan] | None,
                    read: ReadTree | None, quiet: bool, started: float) -> Result:
    """``--out-dir DIR`` of every cluster: exits when written; else the invalid result."""
    from pincompile.emit.folder import compile_to_dir

    try:
        done = compile_to_dir(root, out, fmt=fmt, revision=revision, cache_dir=cache,
                              jobs=jobs, scanning=scanning, read=read)
    except (OutputError, OSError) as exc:
        fail(str(exc), EXIT_USAGE)
    if done.outcome is not None:  # incremental: only changed apps compiled again
        o = done.outcome
        report_warnings(o.warnings)
        if not quiet:
            _summary(o.specs, o.objects, o.clusters, str(out), started,
                     f"; {o.units} changed, {done.written} files written")
        sys.exit(EXIT_OK)
    assert done.result is not None
    result = done.result
    require_specs(len(result.catalog.entries), result.diagnostics, root)
    if not result.diagnostics:
        report_warnings(result.warnings)
        if not quiet:
            _summary(len(result.catalog.entries), done.objects, done.clusters, str(out),
                     started)
        sys.exit(EXIT_OK)
    return result


def _write_clusters(result: Result, rows: list[Row], clusters: tuple[str, ...], fmt: str,
                    out: Path, to_stdout: bool, quiet: bool, started: float) -> None:
    """Write the objects of ``clusters`` (every cluster to stdout) and exit 0."""
    known = sorted(result.catalog.clusters)
    unknown = [c for c in clusters if c not in known]
    if unknown:
        fail(f"unknown cluster {', '.join(unknown)}; clusters: {', '.join(known) or 'none'}",
             EXIT_USAGE)
    rows = [r for r in rows if not clusters or r.cluster in clusters]

    if to_stdout:
        for part in stream_parts(((r.path, r.text) for r in rows), fmt):
            sys.stdout.write(part)
        sys.stdout.flush()
    elif clusters:
        files = {r.path: r.text for r in rows}
        files[PLACEMENT_FILE] = to_json(result.plan.to_json())
        try:
            write_tree(out, dict(sorted(files.items())))
        except (OutputError, OSError) as exc:
            fail(str(exc), EXIT_USAGE)
    if not quiet:
        _summary(len(result.catalog.entries), len(rows), len({r.cluster for r in rows}),
                 "stdout" if to_stdout else str(out), started)
    sys.exit(EXIT_OK)


def _summary(specs: int, objects: int, clusters: int, where: str, started: float,
             note: str = "") -> None:
    click.echo(f"compiled {specs} spec{'s' if specs != 1 else ''} into "
               f"{objects} object{'s' if objects != 1 else ''} for "
               f"{clusters} cluster{'s' if clusters != 1 else ''} → {where} "
               f"({time.monotonic() - started:.2f}s{note})", err=True)


def _check(out: Path) -> None:
    try:
        check_output_dir(out)
    except OutputError as exc:
        fail(str(exc), EXIT_USAGE)
