"""``pincompile get apps|pods``: the apps you may see, or their pods in every member
cluster, through the PinCompute API or straight from the clusters; ``-w`` keeps showing
what changes."""

from __future__ import annotations

import inspect
import sys
import time
from typing import Any

import click

from pincompile.appref import AppRef
from pincompile.commands.common import EXIT_OK, output_option, table_width
from reconciler.api.client import ApiClient
from reconciler.api.models import AppSummary
from reconciler.commands.filters import AppFilter, explain_empty, filter_options
from reconciler.commands.interrupt import bounded_interrupt
from reconciler.commands.remote import (
    EXIT_CODES,
    SERVER_HELP,
    api_client,
    api_errors,
    api_options,
    app_ref,
    in_clusters,
    one_app,
)
from reconciler.commands.tables import pods_text, render_apps

WATCH_SECONDS = 2.0
"""How often ``-w`` asks again."""


@click.command("get")
@click.argument("resource", type=click.Choice(["apps", "pods"]))
@click.argument("app", required=False, metavar="[KIND/PROJECT/NAME]", callback=app_ref)
@filter_options
@output_option("table", "wide", "json", "yaml", "name")
@click.option("-w", "--watch", is_flag=True,
              help="Keep showing the list whenever it changes (Ctrl-C stops).")
@api_options
def get(resource: str, app: AppRef | None, projects: tuple[str, ...], selector: str | None,
        kinds: tuple[str, ...], phases: tuple[str, ...], clusters: tuple[str, ...], fmt: str,
        watch: bool, **api: Any) -> None:
    """List apps, or pods of apps, that you may see (through the PinCompute API, or
    straight from the clusters: see below).

    \b
    apps: one row per app (PinScalers included): phase, ready/desired per cluster,
          rollout, failover, revision, age; the same rows and documents as `pincompile
          status`.
    pods: every pod of the apps in every member cluster: ready containers (the app's and
          its sidecars, as kubectl counts them), status, restarts, age, node, and why a
          container last ended (OOMKilled, Error, ...); -o wide adds every container
          (init containers and sidecars too) with its state and image.
    -p, -k, --phase, --cluster (each repeatable: one of its values) and -l narrow the
    list (all must hold; not with KIND/PROJECT/NAME, which names one app, but --cluster
    narrows its pods); -l matches the labels of the app's spec (metadata.labels) with a
    Kubernetes label selector.
    -o table fits the terminal (names are never cut), -o wide keeps whole lines, -o name
    prints KIND/PROJECT/NAME (pods: CLUSTER/NAMESPACE/POD), -o json|yaml a list
    document (apiVersion, kind, items). Nothing to show says so on stderr. -w asks again
    every 2 s and prints the list again when it changed (an age alone is no change).

    \b
    Examples:
      pincompile get apps
      pincompile get apps -p search --phase Degraded
      pincompile get apps -l 'team=search,tier in (web,api)' -o name
      pincompile get pods PinApp/search/search-api -o wide
      pincompile get pods -p search -p ads -w
    """
    chosen = AppFilter(projects, kinds, phases, clusters, selector)
    if app is not None and (chosen.given and not (resource == "pods" and clusters
                                                  and not (projects or kinds or phases
                                                           or selector))):
        raise click.UsageError(f"{app} names one app: -p, -l, -k and --phase narrow a "
                               "list of apps (--cluster: its pods in those clusters); "
                               "give either")
    try:
        with bounded_interrupt(EXIT_OK), \
                api_client(**api, max_age=WATCH_SECONDS if watch else None) as (client, _), \
                api_errors(str(app) if app else resource, client):
            seen = None
            while True:
                text, empty, same = listing(client, resource, app, chosen, fmt)
                if same != seen:
                    if watch and seen is not None:
                        click.echo(f"--- {time.strftime('%H:%M:%S')}")
                    if text.strip() and not (empty and fmt == "table"):
                        click.echo(text)
                    if empty:
                        click.echo(empty, err=True)
                    seen = same
                if not watch:
                    break
                sys.stdout.flush()
                time.sleep(WATCH_SECONDS)
    except KeyboardInterrupt:
        pass
    sys.exit(EXIT_OK)


def listing(client: ApiClient, resource: str, app: AppRef | None, chosen: AppFilter,
            fmt: str) -> tuple[str, str, str]:
    """The list as ``fmt`` prints it, why it is empty ("" if it is not), and what it is
    without its ages (what ``-w`` compares)."""
    empty = ""
    if app is not None:
        apps: list[AppSummary] = [one_app(client, app)]
    else:
        apps = client.apps(project=chosen.projects, kind=chosen.kinds, phase=chosen.phases,
                           cluster=chosen.clusters, selector=chosen.selector)
        if not apps:
            empty = explain_empty(chosen, client.apps() if chosen.given else [])
    if resource == "apps":
        same = "".join(a.model_dump_json(exclude={"statusTime"}) for a in apps)
        return render_apps(apps, fmt, table_width(fmt)), empty, same
    pods = [(summary, in_clusters(client.pods(summary.kind, summary.project, summary.name),
                                  chosen.clusters)) for summary in apps]
    if apps and not any(found.items for _, found in pods):
        empty = empty or f"{app or 'the apps'}: no pods"
    same = "".join(found.model_dump_json() for _, found in pods)
    return pods_text(pods, fmt, table_width(fmt)), empty, same


get.help = f"{inspect.cleandoc(get.help or '')}\n\n{SERVER_HELP}\n\n{EXIT_CODES}"
