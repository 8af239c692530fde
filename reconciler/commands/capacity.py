"""``pincompile capacity``: can the fleet lose any one zone (or cluster)? The headroom per
cluster and tier, from the specs."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from pincompile.capacity import Report, compile_tree, simulate, survive_rule
from pincompile.capacity.render import headroom_rows, loss_rows, problems, requested_note
from pincompile.commands.common import (
    EXIT_CLUSTER,
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
from reconciler.commands.remote import (
    api_client,
    api_errors,
    api_options,
    needs_store,
    store_option,
)


@click.command("capacity")
@click.argument("root", default=".", type=click.Path(exists=True, file_okay=False,
                                                     path_type=Path))
@click.option("--lose", type=click.Choice(["zone", "cluster"]), default=None,
              help="Lose each zone, or each cluster, in turn  [default: pincompile.yaml's "
              "survive.lose, else zone].")
@click.option("--tier", "tiers", multiple=True, type=click.Choice(list(TIERS)),
              help="A tier that must survive (repeatable)  [default: pincompile.yaml's "
              "survive.tiers, else reserved].")
@click.option("--exit-code", is_flag=True,
              help="Exit 1 when a tier that must survive does not (validate and diff do "
                   "so when pincompile.yaml has survive).")
@click.option("--forecast", is_flag=True,
              help="Forecast from the samples `serve` keeps: per project and tier what its "
                   "pods request and use at their trend, and when quota (or a cluster's "
                   "allocatable) runs out; through --server, or from --store.")
@click.option("-p", "--project", default=None, help="--forecast: only this project.")
@click.option("--since", default="30d", show_default=True,
              help="--forecast: how far back the fit looks (a duration or an RFC 3339 time).")
@click.option("--horizon", default="90d", show_default=True,
              help="--forecast: how far ahead.")
@click.option("--bucket", default="1h", show_default=True,
              help="--forecast: the series' step (the mean of the samples in each).")
@click.option("--live", is_flag=True,
              help="Read the member clusters now instead of the specs: allocatable against "
                   "requested (and used) per cluster, node pool and tier, through --server "
                   "or straight from the clusters with the kubeconfig.")
@output_option("table", "wide", "json")
@jobs_option
@cache_options
@api_options
@store_option
def capacity(root: Path, lose: str | None, tiers: tuple[str, ...], exit_code: bool,
             forecast: bool,
             project: str | None, since: str, horizon: str, bucket: str, live: bool, fmt: str,
             jobs: int | None, cache_dir_option: Path | None, no_cache: bool,
             **api: Any) -> None:
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

    With --forecast, the samples `serve` stores instead: per project, tier and resource a
    straight-line trend plus a repeating week (or day), fitted by least squares and
    explained (trend a day, seasonality, residual), and when what the project requests
    crosses its quota; per cluster, when its pods' requests cross its allocatable.

    With --live, the member clusters as they are now instead (ROOT is not read): per
    cluster, node pool and tier, what the running pods request of what the nodes
    allocate, and what they use (metrics API), with the failover state; through the
    PinCompute API (needs list on clusters.pincompute.io) or with the kubeconfig.

    \b
    Exit codes: 0 reported, 1 the specs are invalid (or, with --exit-code, a tier that must
    survive does not), 2 usage, 3 (--live, --forecast) the server or a cluster cannot be
    read.
    \b
    Examples:
      pincompile capacity examples
      pincompile capacity examples --lose cluster --tier reserved --tier ondemand
      pincompile capacity -o json . | jq '.losses[] | select(.fits.reserved | not)'
      pincompile capacity --live                     # the running local fleet
      pincompile capacity --live --server http://pincompute.internal:8080
      pincompile capacity --forecast -p search --server http://pincompute.internal:8080
    """
    if forecast:
        print_forecast(fmt, api, project, {"since": since, "horizon": horizon,
                                           "bucket": bucket})
        return
    if live:
        print_live(fmt, {k: v for k, v in api.items() if k != "store"})
        return
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
    sys.exit(EXIT_INVALID if exit_code and not done.survives else EXIT_OK)


def print_live(fmt: str, api: dict[str, Any]) -> None:
    """``--live``: the API's ``/clusters`` as a table, or as JSON."""
    from reconciler.api.insight_models import ClusterList
    from reconciler.commands.capacity_live import live_rows

    with api_client(**api) as (client, _), api_errors("clusters"):
        found = client.document("/clusters", ClusterList)
    if fmt == "json":
        click.echo(found.model_dump_json(indent=2, exclude_none=True))
    else:
        rows = live_rows(found.items)
        click.echo("\n".join(aligned(rows, width=table_width(fmt), truncate=[rows[0][-1]])))
    unreachable = [c.name for c in found.items if not c.reachable]
    if unreachable:
        click.echo(f"error: not read: {', '.join(unreachable)}", err=True)
        sys.exit(EXIT_CLUSTER)


def print_forecast(fmt: str, api: dict[str, Any], project: str | None,
                   params: dict[str, str]) -> None:
    """``--forecast``: the API's forecast of one project or every one the caller sees."""
    from reconciler.api.insight_models import ForecastReport
    from reconciler.commands.capacity_forecast import cluster_rows, forecast_rows, heading

    needs_store(api, "the samples a forecast is made from")
    path = f"/projects/{project}/forecast" if project else "/forecast"
    with api_client(**api) as (client, _), api_errors(project or "forecast"):
        report = client.document(path, ForecastReport, **params)
    if fmt == "json":
        click.echo(report.model_dump_json(indent=2))
        return
    width = table_width(fmt)
    click.echo(heading(report))
    if not report.projects:
        click.echo("no samples of your projects in that window", err=True)
    else:
        click.echo("\n".join(aligned(forecast_rows(report), width=width,
                                     truncate=["RUNS OUT"])))
    if report.clusters:
        click.echo("")
        click.echo("\n".join(aligned(cluster_rows(report), width=width)))


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
