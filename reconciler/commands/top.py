"""``pincompile top apps|pods``: what apps and their pods use now, from the member
clusters' metrics API (metrics-server's ``metrics.k8s.io``), against what they request,
per cluster: ``kubectl top`` across every cluster an app runs in."""

from __future__ import annotations

import inspect
import sys
from typing import Any

import click

from pincompile.appref import AppRef
from pincompile.commands.common import EXIT_OK, output_option, table_width
from reconciler.api.models import AppSummary, PodUsage, UsageList
from reconciler.commands.filters import AppFilter, explain_empty, filter_options
from reconciler.commands.remote import (
    EXIT_CODES,
    SERVER_HELP,
    api_client,
    api_errors,
    api_options,
    app_ref,
    one_app,
)
from reconciler.commands.tables import columns, render_list


@click.command("top")
@click.argument("resource", type=click.Choice(["apps", "pods"]))
@click.argument("app", required=False, metavar="[KIND/PROJECT/NAME]", callback=app_ref)
@filter_options
@output_option("table", "wide", "json", "yaml")
@api_options
def top(resource: str, app: AppRef | None, projects: tuple[str, ...], selector: str | None,
        kinds: tuple[str, ...], phases: tuple[str, ...], clusters: tuple[str, ...], fmt: str,
        **api: Any) -> None:
    """What apps (per member cluster) or their pods use now, CPU and memory, against what
    they request (every container's, the sidecars' too), from each member cluster's
    metrics API: `kubectl top` across every cluster an app runs in. A pod not measured
    yet (metrics-server samples every 15 s or so) shows `-`.

    \b
    Examples:
      pincompile top apps -p search
      pincompile top pods PinApp/search/search-api
    """
    chosen = AppFilter(projects, kinds, phases, clusters, selector)
    if app is not None and chosen.given:
        raise click.UsageError(f"{app} names one app: -p, -k, --phase, --cluster and -l "
                               "narrow a list of apps; give either")
    with api_client(**api) as (client, _), api_errors(str(app) if app else resource, client):
        if app is not None:
            apps: list[AppSummary] = [one_app(client, app)]
        else:
            apps = client.apps(project=projects, kind=kinds, phase=phases, cluster=clusters,
                               selector=selector)
            if not apps:
                click.echo(explain_empty(chosen, client.apps() if chosen.given else []),
                           err=True)
        used = [(a, client.top(a.kind, a.project, a.name)) for a in apps
                if a.kind != "PinScaler"]  # a PinScaler's pods are its target's
    if fmt in ("json", "yaml"):
        click.echo(render_list("UsageList", [
            {"app": f"{a.kind}/{a.project}/{a.name}", **u.model_dump()}
            for a, found in used for u in found.items], fmt))
    elif used:
        click.echo((pods_table if resource == "pods" else apps_table)(used, table_width(fmt)))
    sys.exit(EXIT_OK)


def cpu(millicores: int) -> str:
    return f"{millicores}m"


def memory(amount: int) -> str:
    return f"{amount / 2**20:.0f}Mi"


def share(used: int, requested: int) -> str:
    return f"{100 * used / requested:.0f}%" if requested else "-"


def _cells(found: list[PodUsage]) -> list[str]:
    """CPU, CPU/REQ, MEMORY, MEM/REQ of ``found`` together (measured pods only)."""
    measured = [u for u in found if u.measured]
    if not measured:
        return ["-", "-", "-", "-"]
    used_cpu, used_memory = sum(u.cpu for u in measured), sum(u.memory for u in measured)
    return [cpu(used_cpu), share(used_cpu, sum(u.cpuRequest for u in measured)),
            memory(used_memory), share(used_memory, sum(u.memoryRequest for u in measured))]


def pods_table(used: list[tuple[AppSummary, UsageList]], width: int | None) -> str:
    several = len(used) > 1
    table: list[list[Any]] = [[*(["APP"] if several else []), "CLUSTER", "POD", "CPU",
                               "CPU/REQ", "MEMORY", "MEM/REQ"]]
    for app, found in used:
        table += [[*([f"{app.kind}/{app.project}/{app.name}"] if several else []),
                   u.cluster, u.name, *_cells([u])] for u in found.items]
    return _with_problems(columns(table, width, keep=("APP", "POD")), used)


def apps_table(used: list[tuple[AppSummary, UsageList]], width: int | None) -> str:
    table: list[list[Any]] = [["APP", "CLUSTER", "PODS", "CPU", "CPU/REQ", "MEMORY",
                               "MEM/REQ"]]
    for app, found in used:
        for cluster in sorted({u.cluster for u in found.items}):
            here = [u for u in found.items if u.cluster == cluster]
            table.append([f"{app.kind}/{app.project}/{app.name}", cluster, len(here),
                          *_cells(here)])
    return _with_problems(columns(table, width, keep=("APP",)), used)


def _with_problems(text: str, used: list[tuple[AppSummary, UsageList]]) -> str:
    return "\n".join([text, *(f"unreadable: {a.kind}/{a.project}/{a.name}: {p.cluster}: "
                              f"{p.message}" for a, found in used for p in found.unreadable)])


top.help = f"{inspect.cleandoc(top.help or '')}\n\n{SERVER_HELP}\n\n{EXIT_CODES}"
