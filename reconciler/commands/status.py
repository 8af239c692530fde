"""``pincompile status``: one row per app, read from the host cluster."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import click
import yaml

from pincompile.commands.common import EXIT_OK, EXIT_USAGE, fail
from reconciler.clients.connect import Connection
from reconciler.commands.common import cluster_errors, usable_kubeconfig
from reconciler.host import read_rows


@click.command("status")
@click.argument("app", required=False, metavar="[KIND/PROJECT/NAME]")
@click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None,
              help="kubeconfig (default: $KUBECONFIG, else the running local fleet's).")
@click.option("--host-context", default="host", show_default=True,
              help="kubeconfig context of the host cluster.")
@click.option("-o", "--output", "fmt", type=click.Choice(["table", "json", "yaml"]),
              default="table", show_default=True)
@click.option("-w", "--watch", is_flag=True, help="Keep showing changes (Ctrl-C to stop).")
def status(app: str | None, kubeconfig: str | None, host_context: str, fmt: str,
           watch: bool) -> None:
    """One row per app: phase, ready/desired per cluster, rollout position, failover, last
    applied revision and the reason for anything not Healthy; then every member cluster
    that is unreachable, lost (its share runs elsewhere) or returning (shares moving back
    step by step).

    Read from the host cluster (where `pincompile apply` stores it), so it works from any
    machine with the kubeconfig.

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
      pincompile status --watch
    """
    wanted = _parse(app)
    with cluster_errors("host cluster"):
        conn = Connection("host", host_context, usable_kubeconfig(kubeconfig, host_context))
    previous = None
    try:
        while True:
            with cluster_errors("host cluster"):
                rows = read_rows(conn)
            if wanted:
                rows = [r for r in rows if (r["kind"], r["project"], r["name"]) == wanted]
                if not rows:
                    fail(f"no app {app} on the host (has `pincompile apply` run?)", EXIT_USAGE)
            text = render(rows, fmt)
            if text != previous:
                if watch and previous is not None:
                    click.echo(f"--- {time.strftime('%H:%M:%S')}")
                click.echo(text)
                previous = text
            if not watch:
                break
            time.sleep(2.0)
    except KeyboardInterrupt:
        pass
    finally:
        conn.close()
    sys.exit(EXIT_OK)


def _parse(app: str | None) -> tuple[str, str, str] | None:
    if not app:
        return None
    parts = app.split("/")
    if len(parts) != 3:
        fail(f"expected KIND/PROJECT/NAME, got {app!r}", EXIT_USAGE)
    return parts[0], parts[1], parts[2]


def render(rows: list[dict[str, Any]], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(rows, indent=2)
    if fmt == "yaml":
        return yaml.safe_dump(rows, sort_keys=False).rstrip()
    return render_table(rows)


def render_table(rows: list[dict[str, Any]], clusters_text: str = "") -> str:
    """kubectl-like columns: APP PHASE READY CLUSTERS ROLLOUT FAILOVER REVISION APPLIED
    MESSAGE; then the member clusters that are unreachable, lost or returning."""
    header = ["APP", "PHASE", "READY", "CLUSTERS", "ROLLOUT", "FAILOVER", "REVISION",
              "APPLIED", "MESSAGE"]
    table = [header]
    lost = {r["name"]: r["status"].get("failover") or {} for r in rows if r["kind"] == "Cluster"}
    clusters_text = clusters_text or render_clusters(lost)
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
                      str(st.get("lastAppliedTime", "-")),
                      (st.get("message") or "")[:160]])
    text = _columns(table)
    return f"{text}\n\n{clusters_text}" if clusters_text else text


def _failover_cell(move: dict[str, Any]) -> str:
    """``FailedOver``, ``FailingBack 2/4`` (replicas back), ``Stranded`` or ``-``."""
    if not move:
        return "-"
    back = move.get("failback") or {}
    return f"{move.get('phase', '')} {back['back']}/{back['of']}" if back else \
        str(move.get("phase", "-"))


def render_clusters(states: dict[str, dict[str, Any]]) -> str:
    """CLUSTER FAILOVER SINCE REASON for member clusters that are not simply reachable
    ('' when there are none)."""
    table = [["CLUSTER", "FAILOVER", "SINCE", "REASON"]]
    for name, state in sorted(states.items()):
        phase = str(state.get("phase", "-"))
        if phase == "Returning":
            phase += f" (step {state.get('failbackSteps', 0)})"
        table.append([name, phase, str(state.get("since", "-")),
                      str(state.get("reason", ""))[:160]])
    return _columns(table) if len(table) > 1 else ""


def _columns(table: list[list[Any]]) -> str:
    widths = [max(len(str(r[i])) for r in table) for i in range(len(table[0]) - 1)]
    return "\n".join("   ".join(str(c).ljust(w) for c, w in zip(r[:-1], widths, strict=True))
                     + "   " + str(r[-1]) for r in table).rstrip()
