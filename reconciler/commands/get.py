"""``pincompile get apps|pods``: the apps you may see, or their pods in every member
cluster, through the PinCompute API or straight from the clusters; ``-w`` keeps showing
what changes."""

from __future__ import annotations

import inspect
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from functools import partial
from typing import Any

import click

from pincompile.appref import AppRef
from pincompile.commands.common import EXIT_OK, output_option, table_width
from pincompile.selector import Targets
from reconciler.api.client import ApiClient
from reconciler.api.models import AppSummary, PodList
from reconciler.api.pods import ListedPods
from reconciler.clients.connect import Connection
from reconciler.commands.common import cluster_errors, usable_kubeconfig
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
from reconciler.commands.status import read_host_apps
from reconciler.commands.tables import pods_text, render_apps
from reconciler.status.live import member_contexts

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
        with bounded_interrupt(EXIT_OK), ExitStack() as stack:
            if api.get("server"):
                client, _ = stack.enter_context(api_client(**api))
                stack.enter_context(api_errors(str(app) if app else resource, client))
                read: Callable[[], tuple[str, str, str]] = partial(
                    listing, client, resource, app, chosen, fmt)
            else:
                read = stack.enter_context(from_clusters(api, resource, app, chosen, fmt))
            _show(read, watch)
    except KeyboardInterrupt:
        pass
    sys.exit(EXIT_OK)


def _show(read: Callable[[], tuple[str, str, str]], watch: bool) -> None:
    """Print what ``read`` lists; with ``watch``, again whenever it changed."""
    seen = None
    while True:
        text, empty, same = read()
        if same != seen:
            if watch and seen is not None:
                click.echo(f"--- {time.strftime('%H:%M:%S')}")
            if text.strip():
                click.echo(text)
            if empty:
                click.echo(empty, err=True)
            seen = same
        if not watch:
            return
        sys.stdout.flush()
        time.sleep(WATCH_SECONDS)


@contextmanager
def from_clusters(api: dict[str, Any], resource: str, app: AppRef | None,
                  chosen: AppFilter, fmt: str) -> Iterator[Callable[[], tuple[str, str, str]]]:
    """Without --server: the list read from the host's app resources, as `status` reads
    them, and the apps' pods LISTed in their member clusters (the same documents the API
    gives, without running it)."""
    path = usable_kubeconfig(api.get("kubeconfig"), api["host_context"])
    with cluster_errors("host cluster"):
        host = Connection("host", api["host_context"], path)
    pods = ListedPods(path, lambda: member_contexts(host))
    wanted = Targets([app] if app is not None else [], None, chosen.selector)

    def read() -> tuple[str, str, str]:
        with cluster_errors("host cluster"):
            apps, _, _, empty = read_host_apps(host, wanted, chosen)
        return rendered(resource, apps, empty, app, chosen, fmt, lambda a: pods.pods(
            (a.kind, a.project, a.name), [c.name for c in a.clusters]))

    try:
        yield read
    finally:
        pods.close()
        host.close()


def listing(client: ApiClient, resource: str, app: AppRef | None, chosen: AppFilter,
            fmt: str) -> tuple[str, str, str]:
    """The list as the API gives it (see :func:`rendered`)."""
    empty = ""
    if app is not None:
        apps: list[AppSummary] = [one_app(client, app)]
    else:
        apps = client.apps(project=chosen.projects, kind=chosen.kinds, phase=chosen.phases,
                           cluster=chosen.clusters, selector=chosen.selector)
        if not apps:
            empty = explain_empty(chosen, client.apps() if chosen.given else [])
    return rendered(resource, apps, empty, app, chosen, fmt,
                    lambda a: client.pods(a.kind, a.project, a.name))


def rendered(resource: str, apps: Sequence[AppSummary], empty: str, app: AppRef | None,
             chosen: AppFilter, fmt: str, pods_of: Callable[[AppSummary], PodList]
             ) -> tuple[str, str, str]:
    """``apps`` (or their pods, read by ``pods_of``) as ``fmt`` prints them, why there is
    nothing to show ("" if there is), and what the list is without its ages (what ``-w``
    compares)."""
    if resource == "apps":
        same = "".join(a.model_dump_json(exclude={"statusTime"}) for a in apps)
        text = render_apps(apps, fmt, table_width(fmt))
        return ("" if empty and fmt == "table" else text), empty, same
    pods = [(summary, in_clusters(pods_of(summary), chosen.clusters)) for summary in apps]
    if apps and not any(found.items for _, found in pods):
        empty = empty or f"{app or 'the apps'}: no pods"
    same = "".join(found.model_dump_json() for _, found in pods)
    text = pods_text(pods, fmt, table_width(fmt))
    return ("" if empty and fmt == "table" else text), empty, same


get.help = f"{inspect.cleandoc(get.help or '')}\n\n{SERVER_HELP}\n\n{EXIT_CODES}"
