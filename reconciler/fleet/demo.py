"""The end of ``make demo``: wait until every app of the examples is Healthy, then say so.

``python -m reconciler.fleet.demo [ROOT] [--kubeconfig K] [--timeout SECONDS]`` runs a
reconcile pass over ``ROOT`` (default ``examples``) every :data:`INTERVAL` seconds, as
``pincompile apply --no-wait`` would (the first, right after ``apply``, writes nothing but
the apps' status), until every app and PinScaler is Healthy (a finished job is Healthy:
Completed) or Suspended on purpose (the examples pause or stop some) — or Failed, which
needs a fix rather than time — or until the timeout. Right after ``apply`` some are
still on their way — HPAs until metrics-server has scraped the new pods, the JobSet's
indexer shards, the training jobs — and each wait reports which ones and why. The last
line says how many are Healthy and how many Suspended, and names every other one with its
phase and reason. Exit code 0 when no app is in another phase, 1 otherwise, 3 when the
host cannot be reached.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import click

from reconciler.model import Phase

OK_PHASES = (Phase.HEALTHY.value, Phase.COMPLETED.value, Phase.SUSPENDED.value)
#: seconds between passes while waiting
INTERVAL = 10.0
DEFAULT_TIMEOUT = 600.0


def not_ok(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The apps that are neither Healthy nor Suspended."""
    return [r for r in rows if r["kind"] != "Cluster"
            and r["status"].get("phase") not in OK_PHASES]


def describe(rows: Iterable[dict[str, Any]]) -> str:
    """``KIND/PROJECT/NAME Phase (message)`` of each row, ``; ``-separated."""
    return "; ".join(
        f"{r['kind']}/{r['project']}/{r['name']} {r['status'].get('phase', 'Unknown')}"
        + (f" ({r['status']['message']})" if r["status"].get("message") else "")
        for r in rows)


def summary(rows: Iterable[dict[str, Any]]) -> tuple[str, bool]:
    """(the line, whether every app is Healthy or Suspended) for ``pincompile status`` rows."""
    apps = [r for r in rows if r["kind"] != "Cluster"]
    healthy = [r for r in apps if r["status"].get("phase") == Phase.HEALTHY.value]
    completed = [r for r in apps if r["status"].get("phase") == Phase.COMPLETED.value]
    suspended = [r for r in apps if r["status"].get("phase") == Phase.SUSPENDED.value]
    others = not_ok(apps)
    line = (f"demo: {len(healthy)} of {len(apps)} apps Healthy, {len(completed)} Completed "
            f"(jobs that finished), {len(suspended)} Suspended on purpose (paused or "
            "stopped in the examples)")
    if not others:
        return f"{line}; every app is Healthy, Completed or Suspended on purpose", True
    return f"{line}; NOT Healthy: {describe(others)}", False


def read_rows(kubeconfig: str | None) -> list[dict[str, Any]]:
    """The stored status of every app and PinScaler on the fleet's host cluster."""
    from pincompile.contract import WORKLOAD_KINDS
    from reconciler.clients.connect import Connection
    from reconciler.host import app_key, read_apps, spec_kinds

    kinds = [k for k in spec_kinds() if k.kind in (*WORKLOAD_KINDS, "PinScaler")]
    conn = Connection("host", "host", kubeconfig)
    try:
        return [{"kind": key[0], "project": key[1], "name": key[2],
                 "status": cr.get("status") or {}}
                for key, cr in sorted(read_apps(conn, kinds).items(),
                                      key=lambda i: app_key(i[1]))]
    finally:
        conn.close()


def one_pass(kubeconfig: str | None, root: Path) -> None:
    """A reconcile pass that does not wait: it stores every app's current status."""
    from pincompile.contract import compile_path
    from reconciler.engine import Reconciler

    reconciler = Reconciler(kubeconfig)
    try:
        with reconciler.pass_of(compile_path(root)):
            pass  # the statuses as they are now: the next pass reads them again
    finally:
        reconciler.close()


def wait_until_settled(kubeconfig: str | None, root: Path, timeout: float,
                       echo: Callable[[str], None] = print,
                       interval: float = INTERVAL) -> list[dict[str, Any]]:
    """Run passes until every app is Healthy, Suspended or Failed, or ``timeout`` seconds
    passed; report what is still on its way after each pass. The last rows read."""
    start = time.monotonic()
    while True:
        one_pass(kubeconfig, root)
        rows = read_rows(kubeconfig)
        # a Failed app needs a fix, not time
        waiting = [r for r in not_ok(rows) if r["status"].get("phase") != Phase.FAILED.value]
        elapsed = time.monotonic() - start
        if not waiting or elapsed + interval > timeout:
            return rows
        echo(f"demo: {elapsed:4.0f}s, waiting for {len(waiting)} app"
             f"{'' if len(waiting) == 1 else 's'}: {describe(waiting)}")
        time.sleep(interval)


@click.command()
@click.argument("root", default="examples", type=click.Path(exists=True, path_type=Path))
@click.option("--kubeconfig", default=None, help="default: the running local fleet's")
@click.option("--timeout", default=DEFAULT_TIMEOUT, show_default=True, metavar="SECONDS",
              help="How long to wait for every app to be Healthy or Suspended.")
def main(root: Path, kubeconfig: str | None, timeout: float) -> None:
    """Wait (bounded) until every app of ROOT on the fleet is Healthy or Suspended; print
    one line that says which are not."""
    from reconciler.clients.connect import ClusterUnreachable
    from reconciler.commands.common import default_kubeconfig

    try:
        rows = wait_until_settled(kubeconfig or default_kubeconfig(), root, timeout)
    except ClusterUnreachable as exc:
        click.echo(f"demo: the fleet's host cluster cannot be reached: {exc}")
        sys.exit(3)
    line, ok = summary(rows)
    click.echo(line)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
