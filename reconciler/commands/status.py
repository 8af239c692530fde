"""``pincompile status``: one row per app, read from the host cluster."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import click

from pincompile.commands.common import (
    EXIT_INVALID,
    EXIT_OK,
    complete_app_ref,
    fail,
    output_option,
    table_width,
)
from pincompile.selector import Targets
from reconciler.api.models import AppDetail
from reconciler.clients.connect import Connection
from reconciler.commands.common import cluster_errors, targets_of, usable_kubeconfig
from reconciler.commands.filters import AppFilter, did_you_mean, explain_empty, filter_options
from reconciler.commands.tables import app_docs, apps_table, render_apps, render_clusters
from reconciler.host import read_rows
from reconciler.status.live import live_rows, member_contexts, read_members


@click.command("status")
@click.argument("apps", nargs=-1, metavar="[KIND/PROJECT/NAME]...",
                shell_complete=complete_app_ref)
@filter_options
@click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None,
              help="kubeconfig (default: $KUBECONFIG, else the running local fleet's).")
@click.option("--host-context", default="host", show_default=True,
              help="kubeconfig context of the host cluster.")
@output_option("table", "wide", "json", "yaml", "name")
@click.option("--live", is_flag=True,
              help="Compute each app's status now from its objects in the member clusters "
                   "(one LIST per kind and cluster) instead of the host's record.")
@click.option("-w", "--watch", is_flag=True, help="Keep showing changes (Ctrl-C to stop).")
def status(apps: tuple[str, ...], projects: tuple[str, ...], selector: str | None,
           kinds: tuple[str, ...], phases: tuple[str, ...], clusters: tuple[str, ...],
           kubeconfig: str | None, host_context: str, fmt: str, live: bool,
           watch: bool) -> None:
    """One row per app (PinScalers included): phase, ready/desired per cluster, rollout
    position, failover, last applied revision and the reason for anything not Healthy;
    then every member cluster that is unreachable, lost (its share runs elsewhere) or
    returning (shares moving back step by step). Only the apps named, or those every
    filter given matches: -p, -k, --phase and --cluster (each repeatable: one of its
    values) and -l (the spec's labels). The same apps, rows and documents as `pincompile
    get apps`, read straight from the host.

    Read from the host cluster (where `pincompile apply` and `serve` store it), so it
    works from any machine with the kubeconfig. AGE is how long ago the host's record of
    the row was last written (with -o json|yaml: statusTime); `serve` rewrites it within
    seconds of a change in the member clusters, a pass that changes nothing leaves it.
    With --live each app's status is computed now from its objects in every member
    cluster, with the same health rules (a cluster that cannot be read shows Unknown);
    what only a pass knows (rollout, failover, revision) still comes from the host.

    \b
    Phases: Healthy, Completed, Progressing, Degraded, Failed, Suspended, Missing, Unknown
    (a cluster could not be reached).
    Failover: FailedOver (a cluster it ran in is lost), FailingBack N/M (N of M replicas
    moved back), Stranded (a PinPod with failover: false whose cluster is lost). With
    -o json|yaml: an AppList (apiVersion, kind, items), the member clusters that are not
    reachable as its `clusters` (their failover state).
    \b
    Exit codes: 0 ok (no app matching the filters says so on stderr), 1 an app named is
    not on the host, 2 usage (a project, kind, phase or cluster that no app has; the
    kubeconfig is missing, unreadable or has no --host-context), 3 the host cannot be
    reached or refused the request.
    \b
    Examples:
      pincompile status
      pincompile status PinApp/search/search-api -o yaml
      pincompile status -p search -p ads --phase degraded -o wide
      pincompile status --live
      pincompile status --watch
    """
    wanted = targets_of(apps, None, selector, root=False)[1]
    chosen = AppFilter(projects, kinds, phases, clusters, selector)
    path = usable_kubeconfig(kubeconfig, host_context)
    with cluster_errors("host cluster"):
        conn = Connection("host", host_context, path)
    previous = None
    try:
        while True:
            with cluster_errors("host cluster"):
                docs, lost = _read(conn, wanted, chosen, live, path)
            # a row's age grows by itself: show the table again when something else changed
            seen = json.dumps([d.model_dump(exclude={"statusTime"}) for d in docs]
                              + [lost], sort_keys=True)
            if seen != previous:
                if watch and previous is not None:
                    click.echo(f"--- {time.strftime('%H:%M:%S')}")
                text = render_apps(docs, fmt, table_width(fmt), lost)
                if text:
                    click.echo(text)
                previous = seen
            if not watch:
                break
            time.sleep(5.0 if live else 2.0)
    except KeyboardInterrupt:
        pass
    finally:
        conn.close()
    sys.exit(EXIT_OK)


def _read(conn: Connection, wanted: Targets, chosen: AppFilter, live: bool,
          kubeconfig: str | None) -> tuple[list[AppDetail], dict[str, dict[str, Any]]]:
    """:func:`read_host_apps`, or (``live``) those apps' statuses computed now from the
    member clusters; and the member clusters' failover states."""
    shown, lost, rows, empty = read_host_apps(conn, wanted, chosen)
    if empty:
        click.echo(empty, err=True)
    if live and shown:
        placed = {c.name for d in shown for c in d.clusters}
        contexts = {name: context for name, context in member_contexts(conn).items()
                    if name in placed}
        keys = {(d.kind, d.project, d.name) for d in shown}
        rows = [r for r in rows if r["kind"] == "Cluster"
                or (r["kind"], r["project"], r["name"]) in keys]
        shown, lost = app_docs(live_rows(rows, read_members(kubeconfig, contexts)))
    return shown, lost


def read_host_apps(conn: Connection, wanted: Targets, chosen: AppFilter
                   ) -> tuple[list[AppDetail], dict[str, dict[str, Any]], list[dict[str, Any]],
                              str]:
    """The apps ``wanted`` names (exit 1, with the closest, when one is not on the host)
    or ``chosen`` matches, as the host's rows keep them; the member clusters' failover
    states; the rows; and why no app matched ("" when some did)."""
    keep = None if wanted.everything else (
        lambda key, cr: wanted.matches(key[0], key[1], key[2],
                                       (cr.get("metadata") or {}).get("labels")))
    rows = read_rows(conn, keep)
    missing = wanted.refs - {(r["kind"], r["project"], r["name"]) for r in rows}
    if missing:
        first = "/".join(sorted(missing)[0])
        known = [f"{r['kind']}/{r['project']}/{r['name']}" for r in read_rows(conn)]
        fail(f"no app {first} on the host{did_you_mean(first, known)} (has `pincompile "
             "apply` run?)", EXIT_INVALID)
    docs, lost = app_docs(rows)
    shown = [d for d in docs if chosen.matches(d)]
    empty = ""
    if not shown and not wanted.refs:
        # why, against every app there is (the selector already left some out of ``docs``)
        every = app_docs(read_rows(conn))[0] if wanted.selector else docs
        empty = explain_empty(chosen, every)
    return shown, lost, rows, empty


def render(rows: list[dict[str, Any]], fmt: str, width: int | None = None) -> str:
    """The host's rows as ``-o`` asks (see :func:`reconciler.commands.tables.render_apps`)."""
    docs, lost = app_docs(rows)
    return render_apps(docs, fmt, width, lost)


def render_table(rows: list[dict[str, Any]], clusters_text: str = "",
                 width: int | None = None) -> str:
    """The host's rows as the apps' table (then the member clusters that are unreachable,
    lost or returning), fit to ``width``."""
    docs, lost = app_docs(rows)
    return apps_table(docs, width, clusters_text or render_clusters(lost, width))
