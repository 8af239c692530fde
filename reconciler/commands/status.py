"""``pincompile status``: one row per app, read from the host cluster."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import click

from pincompile.commands.common import (
    EXIT_OK,
    EXIT_USAGE,
    complete_app_ref,
    fail,
    output_option,
    table_width,
)
from pincompile.commands.common import columns as aligned
from pincompile.emit.output import to_yaml
from pincompile.selector import Targets
from reconciler.clients.connect import Connection
from reconciler.commands.common import (
    cluster_errors,
    target_options,
    targets_of,
    usable_kubeconfig,
)
from reconciler.host import read_rows
from reconciler.status.live import live_rows, member_contexts, read_members


@click.command("status")
@click.argument("apps", nargs=-1, metavar="[KIND/PROJECT/NAME]...",
                shell_complete=complete_app_ref)
@target_options
@click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None,
              help="kubeconfig (default: $KUBECONFIG, else the running local fleet's).")
@click.option("--host-context", default="host", show_default=True,
              help="kubeconfig context of the host cluster.")
@output_option("table", "wide", "json", "yaml", "name")
@click.option("--live", is_flag=True,
              help="Compute each app's status now from its objects in the member clusters "
                   "(one LIST per kind and cluster) instead of the host's record.")
@click.option("-w", "--watch", is_flag=True, help="Keep showing changes (Ctrl-C to stop).")
def status(apps: tuple[str, ...], project: str | None, selector: str | None,
           kubeconfig: str | None, host_context: str, fmt: str, live: bool,
           watch: bool) -> None:
    """One row per app: phase, ready/desired per cluster, rollout position, failover, last
    applied revision and the reason for anything not Healthy; then every member cluster
    that is unreachable, lost (its share runs elsewhere) or returning (shares moving back
    step by step). Only the apps named, of -p PROJECT or matching -l SELECTOR when given.

    Read from the host cluster (where `pincompile apply` and `serve` store it), so it
    works from any machine with the kubeconfig. AGE is how long ago the host's record of
    the row was last written (with -o json|yaml: statusTime); `serve` rewrites it within
    seconds of a change in the member clusters, a pass that changes nothing leaves it.
    With --live each app's status is computed now from its objects in every member
    cluster, with the same health rules (a cluster that cannot be read shows Unknown);
    what only a pass knows (rollout, failover, revision) still comes from the host.

    \b
    Phases: Healthy, Progressing, Degraded, Failed, Suspended, Missing, Unknown (a
    cluster could not be reached).
    Failover: FailedOver (a cluster it ran in is lost), FailingBack N/M (N of M replicas
    moved back), Stranded (a PinPod with failover: false whose cluster is lost). With
    -o json|yaml, member clusters that are not reachable follow the apps as rows of kind
    Cluster (their status.failover).
    \b
    Exit codes: 0 ok, 2 usage (or no such app; or the kubeconfig is missing, unreadable or
    has no --host-context), 3 the host cannot be reached or refused the request.
    \b
    Examples:
      pincompile status
      pincompile status PinApp/search/search-api -o yaml
      pincompile status -p search -l team=search -o wide
      pincompile status --live
      pincompile status --watch
    """
    wanted = targets_of(apps, project, selector, root=False)[1]
    path = usable_kubeconfig(kubeconfig, host_context)
    with cluster_errors("host cluster"):
        conn = Connection("host", host_context, path)
    keep = None if wanted.everything else (
        lambda key, cr: wanted.matches(key[0], key[1], key[2],
                                       (cr.get("metadata") or {}).get("labels")))
    previous = None
    try:
        while True:
            with cluster_errors("host cluster"):
                rows = read_rows(conn, keep)
                missing = wanted.refs - {(r["kind"], r["project"], r["name"]) for r in rows}
                if missing:
                    fail(f"no app {', '.join('/'.join(m) for m in sorted(missing))} on the "
                         "host (has `pincompile apply` run?)", EXIT_USAGE)
                if live:
                    rows = live_rows(rows, read_members(path, _contexts(conn, rows, wanted)))
            # a row's age grows by itself: show the table again when something else changed
            seen = json.dumps([{k: v for k, v in r.items() if k != "statusTime"}
                               for r in rows], sort_keys=True)
            if seen != previous:
                if watch and previous is not None:
                    click.echo(f"--- {time.strftime('%H:%M:%S')}")
                text = render(rows, fmt, table_width(fmt))
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


def _contexts(conn: Connection, rows: list[dict[str, Any]], wanted: Targets
              ) -> dict[str, str]:
    """The member clusters --live reads: every one, or only those the apps asked for are
    placed in."""
    contexts = member_contexts(conn)
    if wanted.everything:
        return contexts
    placed = {c.get("name") for r in rows for c in r["status"].get("clusters") or []}
    return {name: context for name, context in contexts.items() if name in placed}


def render(rows: list[dict[str, Any]], fmt: str, width: int | None = None) -> str:
    """Rows as ``-o`` asks: json, yaml, name (KIND/PROJECT/NAME of each app) or a table
    fit to ``width``."""
    if fmt == "name":
        return "\n".join(f"{r['kind']}/{r['project']}/{r['name']}" for r in rows
                         if r["kind"] != "Cluster")
    if fmt == "json":
        return json.dumps(rows, indent=2)
    if fmt == "yaml":
        return to_yaml(rows).rstrip()
    return render_table(rows, width=width)


def age(stamp: str | None, now: float | None = None) -> str:
    """How long ago an RFC 3339 instant was, as kubectl's AGE column says it (``45s``,
    ``3m12s``, ``17m``, ``5h40m``, ``2d3h``); ``-`` when unknown."""
    if not stamp:
        return "-"
    try:
        then = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return "-"
    seconds = max(0, int((now if now is not None else time.time()) - then))
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 600:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if hours < 3:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if days < 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    return f"{days}d"


def render_table(rows: list[dict[str, Any]], clusters_text: str = "",
                 width: int | None = None) -> str:
    """kubectl-like columns: APP PHASE READY CLUSTERS ROLLOUT FAILOVER REVISION APPLIED AGE
    MESSAGE; then the member clusters that are unreachable, lost or returning. With a
    ``width`` (see :func:`pincompile.commands.common.table_width`) long cells are cut and
    the least needed columns left out until each line fits it."""
    header = ["APP", "PHASE", "READY", "CLUSTERS", "ROLLOUT", "FAILOVER", "REVISION",
              "APPLIED", "AGE", "MESSAGE"]
    table = [header]
    lost = {r["name"]: r["status"].get("failover") or {} for r in rows if r["kind"] == "Cluster"}
    clusters_text = clusters_text or render_clusters(lost, width)
    for row in rows:
        if row["kind"] == "Cluster":
            continue
        st = row["status"]
        clusters = " ".join(f"{c['name']}={c.get('readyReplicas', 0)}/{c.get('replicas', 0)}"
                            if c.get("phase") != "Unknown" else f"{c['name']}=?"
                            for c in st.get("clusters") or [])
        rollout = st.get("rollout") or {}
        position = ""
        if rollout:
            position = (rollout.get("phase", "") if rollout.get("phase") == "Complete" else
                        f"{rollout.get('phase', '')} {rollout.get('zone', '')}").strip()
        table.append([f"{row['kind']}/{row['project']}/{row['name']}", st.get("phase", "-"),
                      st.get("ready", "-"), clusters or "-", position or "-",
                      _failover_cell(st.get("failover") or {}),
                      str(st.get("lastAppliedRevision", "-"))[:12],
                      str(st.get("lastAppliedTime", "-")), age(row.get("statusTime")),
                      st.get("message") or ""])
    text = columns(table, width, truncate=("MESSAGE", "CLUSTERS"),
                   drop=("APPLIED", "REVISION", "ROLLOUT", "FAILOVER", "AGE", "CLUSTERS"))
    return f"{text}\n\n{clusters_text}" if clusters_text else text


def _failover_cell(move: dict[str, Any]) -> str:
    """``FailedOver``, ``FailingBack 2/4`` (replicas back), ``Stranded`` or ``-``."""
    if not move:
        return "-"
    back = move.get("failback") or {}
    return f"{move.get('phase', '')} {back['back']}/{back['of']}" if back else \
        str(move.get("phase", "-"))


def render_clusters(states: dict[str, dict[str, Any]], width: int | None = None) -> str:
    """CLUSTER FAILOVER SINCE REASON for member clusters that are not simply reachable
    ('' when there are none), fit to ``width``."""
    table = [["CLUSTER", "FAILOVER", "SINCE", "REASON"]]
    for name, state in sorted(states.items()):
        phase = str(state.get("phase", "-"))
        if phase == "Returning":
            phase += f" (step {state.get('failbackSteps', 0)})"
        table.append([name, phase, str(state.get("since", "-")),
                      str(state.get("reason", ""))])
    return columns(table, width, drop=("SINCE",)) if len(table) > 1 else ""


def columns(table: list[list[Any]], width: int | None = None, *,
            truncate: Sequence[str] = (), drop: Sequence[str] = ()) -> str:
    """The reconciler's tables: aligned columns fit to ``width`` (see
    :func:`pincompile.commands.common.columns`)."""
    return "\n".join(aligned(table, gap="   ", width=width, truncate=truncate, drop=drop))
