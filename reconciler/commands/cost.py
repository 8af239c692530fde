"""``pincompile cost``: what each project costs per tier and app, how much of what it
requests it uses, and each cluster's idle capacity, from the insight store's samples."""

from __future__ import annotations

import csv
import io
from typing import Any

import click

from pincompile.commands.common import columns as aligned
from pincompile.commands.common import output_option, table_width
from reconciler.api.insight_models import CostReport, ProjectCost, ProjectCostEntry
from reconciler.commands.remote import (
    api_client,
    api_errors,
    api_options,
    needs_store,
    store_option,
)
from reconciler.insight.cost import money, share


def cost_rows(projects: list[ProjectCostEntry]) -> list[list[str]]:
    """Header first; per project a total, a row per tier, then a row per app."""
    rows = [["PROJECT", "TIER", "APP", "COST", "CPU USED/REQ", "MEMORY USED/REQ",
             "CORE-HOURS", "GIB-HOURS"]]
    for p in projects:
        eff = p.efficiency
        hours = p.requested
        rows.append([p.project, "all", "-", money(p.cost),
                     share(eff.cpu if eff else None), share(eff.memory if eff else None),
                     f"{hours.cpuCoreHours:,.2f}" if hours else "-",
                     f"{hours.memoryGiBHours:,.2f}" if hours else "-"])
        rows += [[p.project, tier, "-", money(cost), "", "", "", ""]
                 for tier, cost in p.byTier.items()]
        rows += [[p.project, a.tier, a.app, money(a.cost), share(a.efficiency.cpu),
                  share(a.efficiency.memory), f"{a.requested.cpuCoreHours:,.2f}",
                  f"{a.requested.memoryGiBHours:,.2f}"] for a in p.apps]
    return rows


def csv_text(report: CostReport) -> str:
    """One row per app and per cluster's idle capacity."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["row", "since", "until", "currency", "project", "tier", "app",
                     "cluster", "cost", "cpu_cost", "memory_cost", "gpu_cost",
                     "cpu_core_hours", "memory_gib_hours", "gpu_hours", "cpu_efficiency",
                     "memory_efficiency", "idle_share"])
    head = [report.since, report.until, report.currency]
    for p in report.projects:
        for a in p.apps:
            by = a.costByResource
            writer.writerow(["app", *head, p.project, a.tier, a.app, "", a.cost,
                             by.get("cpu"), by.get("memory"), by.get("nvidia.com/gpu"),
                             a.requested.cpuCoreHours, a.requested.memoryGiBHours,
                             a.requested.gpuHours, a.efficiency.cpu, a.efficiency.memory, ""])
    for i in report.idle:
        writer.writerow(["idle", *head, "", "", "", i.cluster, i.idleCost, "", "", "", "", "",
                         "", "", "", i.idleShare])
    return out.getvalue()


@click.command("cost")
@click.option("-p", "--project", default=None, help="Only this project.")
@click.option("--since", default="30d", show_default=True,
              help="From when: a duration before --until (30d, 12h) or an RFC 3339 time.")
@click.option("--until", default=None,
              help="Up to when: an RFC 3339 time, or a duration before now (default: now).")
@output_option("table", "wide", "json", "csv",
               note="csv: one row per app and per cluster's idle capacity.")
@api_options
@store_option
def cost(project: str | None, since: str, until: str | None, fmt: str, **api: Any) -> None:
    """What each project costs per tier and app, and how much of what it requests it uses.

    Each pod is charged the larger of what it requests and what it uses (metrics API),
    resource by resource, times its tier's hourly price in its cluster (the Cluster
    spec's prices when `serve` sampled it; every 5 minutes). EFFICIENCY is what the pods
    used over what they requested. The capacity no pod is charged for is each
    cluster's idle share, shown apart and never spread over the projects. Only the
    projects you may see (list one of their app kinds); the idle capacity of every
    cluster with list on clusters.pincompute.io, else of the clusters your projects ran in.

    Read through the PinCompute API (--server), or without a server from the store
    `serve --store` writes (--store URL).

    \b
    Exit codes: 0 ok, 1 no such project, 2 usage, 3 the server is unreachable or refused.
    \b
    Examples:
      pincompile cost                          # every project you may see, last 30 days
      pincompile cost -p search --since 7d
      pincompile cost --since 2026-11-01T00:00:00Z -o csv > november.csv
    """
    needs_store(api, "cost")
    with api_client(**api) as (client, _), api_errors(project or "cost"):
        params = {"since": since, "until": until}
        if project is not None:
            one = client.document(f"/projects/{project}/cost", ProjectCost, **params)
            report = CostReport(since=one.since, until=one.until, currency=one.currency,
                                projects=[one] if one.apps else [], idle=one.idle)
        else:
            report = client.document("/cost", CostReport, **params)
    if fmt == "json":
        click.echo(report.model_dump_json(indent=2))
    elif fmt == "csv":
        click.echo(csv_text(report), nl=False)
    else:
        print_cost(report, fmt)


def print_cost(report: CostReport, fmt: str) -> None:
    width = table_width(fmt)
    click.echo(f"Cost from {report.since} to {report.until}"
               f"{', in ' + report.currency if report.currency else ''}: each pod charged "
               "max(request, usage) x its tier's price per hour")
    if not report.projects:
        click.echo("no samples of your projects in that window", err=True)
    else:
        click.echo("\n".join(aligned(cost_rows(report.projects), width=width,
                                     truncate=["APP"], drop=["GIB-HOURS", "CORE-HOURS"])))
    if report.idle:
        click.echo("\nIdle capacity (allocatable no pod is charged for; not in any project):")
        rows = [["CLUSTER", "CAPACITY COST", "IDLE COST", "IDLE SHARE"],
                *([i.cluster, money(i.capacityCost), money(i.idleCost), share(i.idleShare)]
                  for i in report.idle)]
        click.echo("\n".join(aligned(rows, width=width)))
    if any(p.unpricedHours for p in report.projects):
        click.echo("note: some samples are in clusters or tiers without prices "
                   "(Cluster spec.prices): not counted", err=True)

