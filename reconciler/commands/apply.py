"""``pincompile apply``: one reconcile pass over every member cluster."""

from __future__ import annotations

import sys
import time
from collections import Counter
from datetime import datetime
from typing import Any

import click

from pincompile.commands.common import (
    EXIT_CLUSTER,
    EXIT_OK,
    EXIT_UNCONVERGED,
    complete_app_ref,
    output_option,
    table_width,
)
from pincompile.contract import Result
from reconciler.clock import iso_time
from reconciler.commands.common import (
    check_clusters,
    check_targets,
    clock_of,
    cluster_errors,
    cluster_options,
    compile_or_exit,
    failover_options,
    target_options,
    targets_of,
    usable_kubeconfig,
)
from reconciler.commands.options import DURATION
from reconciler.commands.status import render_clusters, render_table
from reconciler.engine import HOST, Reconciler
from reconciler.model import AppKey, PassReport
from reconciler.plan.cluster_plan import Options
from reconciler.progress import Progress
from reconciler.progress import for_output as progress_for


@click.command("apply")
@click.argument("args", nargs=-1, metavar="[ROOT] [KIND/PROJECT/NAME]...",
                shell_complete=complete_app_ref)
@target_options
@cluster_options
@click.option("--max-prune", default="20%", show_default=True,
              help="Refuse a pass that would prune more than this of a cluster's managed "
                   "objects (a count, or a percent).")
@click.option("--prune-data", is_flag=True,
              help="Also prune Namespaces and PersistentVolumeClaims no longer desired.")
@click.option("--no-prune", is_flag=True, help="Never prune.")
@click.option("--adopt", is_flag=True,
              help="Take over existing unmanaged objects that hold a desired name.")
@click.option("--dry-run", is_flag=True, help="Same as `pincompile plan`: change nothing.")
@click.option("--no-wait", is_flag=True, help="Do not wait for the objects to be healthy.")
@click.option("--timeout", type=DURATION, default="5m", show_default=True,
              help="Longest wait for health after applying (30s, 5m, 1h; plain seconds "
                   "too).")
@failover_options
@output_option("table", "wide", note="(the apps' status table at the end of the pass)")
@click.option("-q", "--quiet", is_flag=True, help="Only the summary.")
@click.pass_context
def apply(ctx: click.Context, args: tuple[str, ...], project: str | None,
          selector: str | None, kubeconfig: str | None, host_context: str,
          clusters: tuple[str, ...], at: datetime | None, max_prune: str, prune_data: bool,
          no_prune: bool, adopt: bool, dry_run: bool, no_wait: bool, timeout: float,
          failover_after: float, failback_step: str, fmt: str, quiet: bool) -> None:
    """Make every member cluster match the specs under ROOT (default: .): one reconcile
    pass. With KIND/PROJECT/NAME, -p PROJECT or -l SELECTOR only those apps' objects are
    written and pruned (the whole tree is still compiled and checked): an object of
    another app is never pruned, nor its resource or status on the host touched.

    \b
    1. compile ROOT (any error: nothing is applied anywhere, nothing pruned);
    2. on the host cluster: install missing CRDs, store every spec as its resource;
    3. per member cluster, in parallel: server-side apply in dependency order
       (Namespace, PriorityClass, quota, config, storage, Service, workloads, HPA, PDB,
       Ingress), replace objects whose immutable fields changed, prune managed objects no
       longer desired (refused above --max-prune; Namespaces and PVCs only with
       --prune-data);
    4. zone-by-zone rollouts: the next zone starts when the previous one is healthy; a
       zone not healthy within the app's health timeout halts the rollout;
    5. wait for health and write one status per app to the host (`pincompile status`).

    Failover: a member that has not answered for --failover-after (or is cordoned with
    schedulable: false) is lost; its share of every app is placed on the other eligible
    clusters (PinPods only with failover: true). When it answers again, each app moves
    back at most --failback-step per pass. The state is kept on the host.

    Objects without the label app.kubernetes.io/managed-by=pincompile are never changed
    (a conflict is reported) unless --adopt. Fields other managers own are left alone.
    A pass with nothing to change makes no write at all.

    \b
    Exit codes: 0 every targeted cluster converged; 1 invalid specs, or unconverged: a
    conflict, an object the API server rejected, a prune held by --max-prune or a halted
    rollout (the pass ends with what is left and why); 2 usage (also: the kubeconfig is
    missing or unreadable, or has no --host-context); 3 a cluster failed, or its context is
    not in the kubeconfig (the others were still reconciled; run again once it is back).
    \b
    Examples:
      pincompile apply examples
      pincompile apply examples PinApp/search/search-api
      pincompile apply examples -p search -l team=search
      pincompile apply . --cluster use1a-general-01 --max-prune 5
      pincompile apply . --dry-run
      pincompile apply . --failover-after 2m --failback-step 50%
    """
    if dry_run:
        from reconciler.commands.plan import plan

        ctx.invoke(plan, args=args, project=project, selector=selector,
                   kubeconfig=kubeconfig, host_context=host_context, clusters=clusters,
                   at=at, adopt=adopt, max_prune=max_prune, prune_data=prune_data)
        return
    started = time.monotonic()
    root, wanted = targets_of(args, project, selector)
    result = compile_or_exit(root)
    check_clusters(result, clusters)
    check_targets(result, wanted)
    path = usable_kubeconfig(kubeconfig, host_context)
    progress = Progress() if quiet else progress_for(lambda m: click.echo(m, err=True),
                                                     terminal=sys.stdout.isatty())
    progress.line(f"compiled {len(result.manifests)} objects for "
                  f"{len({m.cluster for m in result.manifests})} clusters")
    reconciler = Reconciler(
        path, host_context, clusters=clusters or None,
        options=Options(adopt=adopt, prune=not no_prune, max_prune=max_prune,
                        prune_data=prune_data),
        echo=progress.line, clock=clock_of(at), failover_after=failover_after,
        failback_step=failback_step, progress=progress, apps=wanted)
    report, writes, statuses, lost = _run(reconciler, result, progress,
                                          None if no_wait else timeout)
    click.echo(_summary(report, writes, time.monotonic() - started))
    _report_and_exit(report, statuses, lost, quiet, table_width(fmt))


def _run(reconciler: Reconciler, result: Result, progress: Progress, wait: float | None
         ) -> tuple[PassReport, dict[str, int], dict[AppKey, dict[str, Any]], dict[str, Any]]:
    """One pass, then (``wait``: for that many seconds at most) health checks of what it
    wrote, repeated until it is healthy, then the statuses: its report, the writes per
    cluster, the apps' statuses and the clusters that are not reachable (their failover
    state)."""
    try:
        with cluster_errors("a cluster"):
            with reconciler.pass_of(result) as flight:
                if wait is not None:
                    reconciler.settle(flight, wait)
            report = flight.report
        writes = {name: conn.stats.writes for name, conn in reconciler.connections.items()}
        lost = {n: s.to_json() for n, s in reconciler.cluster_states.items()
                if s.phase != "Reachable"}
        return report, writes, reconciler.statuses, lost
    finally:
        progress.close()
        reconciler.close()


def _report_and_exit(report: PassReport, statuses: dict[AppKey, dict[str, Any]],
                     lost: dict[str, Any], quiet: bool, width: int | None) -> None:
    """Print the apps' status table (fit to ``width``) and what the pass left undone; exit
    as documented."""
    if not quiet and statuses:
        click.echo(render_table([_as_row(app, doc) for app, doc in statuses.items()],
                                render_clusters(lost, width), width=width))
    left = _left(report)
    if left:
        click.echo(left, err=True)
    if not report.ok:
        sys.exit(EXIT_CLUSTER)
    sys.exit(EXIT_OK if report.converged else EXIT_UNCONVERGED)


def _left(report: PassReport) -> str:
    """The closing summary of what the pass could not do, and why ("" when converged)."""
    failed = [(n, c.error) for n, c in sorted(report.clusters.items()) if c.error]
    items = report.unconverged
    if not failed and not items:
        return ""
    lines = []
    if failed:
        lines.append(f"NOT CONVERGED: {len(failed)} cluster(s) could not be reconciled "
                     "(exit 3):")
        lines += [f"  {name}: FAILED: {error}" for name, error in failed]
    if items:
        counts = Counter(str(item.left) for _, item in items)
        what = ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items()))
        lines.append(f"NOT CONVERGED: {len(items)} thing(s) left different from the specs "
                     f"({what}):")
        lines += [f"  {cluster}: {item}" for cluster, item in items]
    return "\n".join(lines)


def _summary(report: PassReport, writes: dict[str, int], seconds: float) -> str:
    members = {n: c for n, c in report.clusters.items() if n != HOST}
    created = sum(len(c.created) for c in members.values())
    updated = sum(len(c.updated) for c in members.values())
    replaced = sum(len(c.replaced) for c in members.values())
    pruned = sum(len(c.pruned) for c in members.values())
    unchanged = sum(c.unchanged for c in members.values())
    recorded = sum(len(c.recorded) for c in members.values())
    rerecorded = f" ({recorded} re-recorded)" if recorded else ""
    member_writes = sum(n for name, n in writes.items() if name != HOST)
    host_writes = writes.get(HOST, 0)
    failed = sum(1 for c in report.clusters.values() if c.error)
    head = (f"revision {report.revision[:12]}: {created} created, {updated} updated, "
            f"{replaced} replaced, {pruned} pruned, {unchanged} unchanged"
            f"{rerecorded} in {len(members)} clusters")
    tail = ("zero writes to member clusters: everything was already in sync"
            if member_writes == 0 else f"{member_writes} write requests to member clusters")
    tail += f", {host_writes} to the host (specs, status, events)"
    fail = f"; {failed} cluster(s) FAILED" if failed else ""
    left = len(report.unconverged)
    fail += f"; {left} left unconverged" if left else ""
    return f"{head}; {tail}{fail} ({seconds:.1f}s)"


def _as_row(app: AppKey, doc: dict[str, object]) -> dict[str, object]:
    kind, project, name = app
    return {"kind": kind, "project": project, "name": name,
            "statusTime": iso_time(time.time()), "status": doc}
