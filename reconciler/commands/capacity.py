"""``pincompile capacity``: can the fleet lose any one zone (or cluster)? The headroom per
cluster and tier, from the specs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from pincompile.capacity import Report, compile_tree, simulate, survive_rule
from pincompile.capacity.render import headroom_rows, loss_rows, problems, requested_note
from pincompile.commands.common import (
    EXIT_INVALID,
    EXIT_OK,
    cache_dir,
    cache_options,
    jobs_option,
    output_option,
    report,
    require_specs,
    table_width,
)
from pincompile.commands.common import columns as aligned
from pincompile.models import TIERS


@click.command("capacity")
@click.argument("root", default=".", type=click.Path(exists=True, file_okay=False,
                                                     path_type=Path))
@click.option("--lose", type=click.Choice(["zone", "cluster"]), default=None,
              help="Lose each zone, or each cluster, in turn  [default: pincompile.yaml's "
              "survive.lose, else zone].")
@click.option("--tier", "tiers", multiple=True, type=click.Choice(list(TIERS)),
              help="A tier that must survive (repeatable)  [default: pincompile.yaml's "
              "survive.tiers, else reserved].")
@output_option("table", "json")
@jobs_option
@cache_options
def capacity(root: Path, lose: str | None, tiers: tuple[str, ...], fmt: str,
             jobs: int | None, cache_dir_option: Path | None, no_cache: bool) -> None:
    """Can the fleet lose any one zone (or cluster)? Simulates losing each in turn with
    the reconciler's own failover rules: the workloads that ran there are placed again
    without it, as a reconcile pass places them once it finds the clusters lost (a PinPod
    with failover: false is lost with them), and the survivors' pools are summed as
    placement sums them (a scaled app at its maxReplicas, rollout surge included).

    A tier's workloads need room beside their own tier and the tiers above it: the
    scheduler preempts lower tiers for them. Prints, per loss, how many workloads move,
    whether each tier fits (tiers that must survive are marked *), the tightest pool
    left, then every app that would not fit and every pool a loss overfills, by how much;
    then the headroom per cluster and tier without a loss.

    \b
    Exit codes: 0 every required tier survives every loss, 1 one does not (or the specs
    are invalid), 2 usage.
    \b
    Examples:
      pincompile capacity examples
      pincompile capacity examples --lose cluster --tier reserved --tier ondemand
      pincompile capacity -o json . | jq '.losses[] | select(.fits.reserved | not)'
    """
    from pincompile.forked import cpus

    jobs = jobs or cpus()
    result = compile_tree(root, cache_dir(cache_dir_option, no_cache), jobs)
    require_specs(len(result.catalog.entries), result.diagnostics, root)
    if result.diagnostics:
        report(result.diagnostics, result.sources, "json" if fmt == "json" else "text")
        sys.exit(EXIT_INVALID)
    rule = survive_rule(result.sources)
    lose = lose or (rule.lose if rule else "zone")
    required = tiers or (rule.tiers if rule else ("reserved",))
    done = simulate(result, lose, required, jobs=jobs)
    if fmt == "json":
        click.echo(json.dumps(done.to_json(), indent=2))
    else:
        print_report(done, fmt)
    sys.exit(EXIT_OK if done.survives else EXIT_INVALID)


def print_report(done: Report, fmt: str) -> None:
    """The report as tables for people."""
    width = table_width(fmt)
    marked = ", ".join(done.required) or "none"
    click.echo(f"Losing one {done.lose} at a time (* must survive: {marked})")
    rows = loss_rows(done)
    click.echo("\n".join(aligned(rows, width=width, truncate=[rows[0][-1]])))
    found = problems(done)
    if found:
        click.echo("\nWhat would not fit:")
        click.echo("\n".join(f"  {line}" for line in found))
    click.echo(f"\nHeadroom without a loss ({requested_note()}):")
    click.echo("\n".join(aligned(headroom_rows(done.headroom), width=width)))
    verdict = "survives" if done.survives else "does NOT survive"
    click.echo(f"\nThe fleet {verdict} the loss of any one {done.lose} for {marked}.")
