"""What the reconciler's commands share: finding the kubeconfig, compiling first, options."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from pincompile.cachedir import local_fleet_kubeconfig
from pincompile.commands.common import EXIT_CLUSTER, EXIT_INVALID, EXIT_USAGE, fail
from pincompile.commands.common import report as report_diagnostics
from pincompile.compiler import compile_path
from pincompile.pipeline import Result
from reconciler.commands.options import DURATION

if TYPE_CHECKING:
    from pincompile.selector import Targets

F = TypeVar("F", bound=Callable[..., Any])


def default_kubeconfig() -> str | None:
    """``$KUBECONFIG``; else the local fleet's kubeconfig while ``pincompile fleet up`` has
    one in the cache folder (:func:`~pincompile.cachedir.local_fleet_kubeconfig`; ``fleet
    down`` removes it); else None: the client's own default, ``~/.kube/config``."""
    if os.environ.get("KUBECONFIG"):
        return os.environ["KUBECONFIG"]
    fleet = local_fleet_kubeconfig()
    return str(fleet) if fleet.is_file() else None


def usable_kubeconfig(kubeconfig: str | None, context: str | None = None) -> str | None:
    """``kubeconfig`` (or :func:`default_kubeconfig`) once it is known to be a readable
    kubeconfig holding ``context``; else one line on stderr and exit 2 (usage)."""
    from reconciler.clients.connect import KubeconfigError, contexts, load_configuration

    path = kubeconfig or default_kubeconfig()
    try:
        if context is None:
            contexts(path)
        else:
            load_configuration(path, context)
    except KubeconfigError as exc:
        fail(str(exc), EXIT_USAGE)
    return path


@contextmanager
def cluster_errors(cluster: str = "host cluster") -> Iterator[None]:
    """One line and an exit code instead of a traceback: a kubeconfig that cannot be used
    exits 2 (usage), a cluster that does not answer or refuses a request exits 3."""
    from kubernetes.client.exceptions import ApiException
    from kubernetes.dynamic.exceptions import DynamicApiError

    from reconciler.clients.connect import ClusterUnreachable, KubeconfigError

    try:
        yield
    except KubeconfigError as exc:
        fail(str(exc), EXIT_USAGE)
    except ClusterUnreachable as exc:
        fail(f"{cluster} unreachable: {exc}", EXIT_CLUSTER)
    except (ApiException, DynamicApiError) as exc:
        fail(f"{cluster} refused the request: {exc.status} {exc.reason}", EXIT_CLUSTER)


def _instant(_ctx: click.Context, _param: click.Parameter, value: str | None
             ) -> datetime | None:
    if value is None:
        return None
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not an ISO 8601 instant "
                                 "(e.g. 2026-11-23T18:00:00Z)") from None
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def clock_of(at: datetime | None) -> Callable[[], datetime] | None:
    """The clock a Reconciler evaluates scaling windows with (None: the real one)."""
    return None if at is None else (lambda: at)


def cluster_options(func: F) -> F:
    """--kubeconfig, --host-context, --cluster and --at."""
    func = click.option("--at", callback=_instant, metavar="INSTANT", default=None,
                        help="Evaluate scheduled scaling windows at this instant instead of "
                             "now (ISO 8601, UTC unless it says otherwise), e.g. to preview "
                             "business hours.")(func)
    func = click.option("--cluster", "clusters", multiple=True, metavar="NAME",
                        help="Only this member cluster (repeatable).")(func)
    func = click.option("--host-context", default="host", show_default=True,
                        help="kubeconfig context of the host cluster (holds specs and "
                             "status).")(func)
    return click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None,
                        help="kubeconfig (default: $KUBECONFIG, else the running local "
                             "fleet's, else ~/.kube/config).")(func)


def _failback_step(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    from reconciler.failover import parse_step

    try:
        return parse_step(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def failover_options(func: F) -> F:
    """--failover-after and --failback-step (``apply`` and ``serve``)."""
    func = click.option("--failback-step", default="25%", show_default=True,
                        callback=_failback_step, metavar="COUNT|PERCENT",
                        help="Once a lost cluster answers again, move at most this much of "
                             "each app's replicas back to it per pass (a count, or a "
                             "percent of the app's replicas; at least 1).")(func)
    return click.option("--failover-after", type=DURATION, default="5m", show_default=True,
                        help="A member cluster that has not answered for this long is lost: "
                             "its share of every app is placed on the other eligible "
                             "clusters (failures shorter than this move nothing).")(func)


def compile_or_exit(root: Path) -> Result:
    """Compile ROOT; on any error print them all and exit 1 (nothing is touched)."""
    result = compile_path(root)
    if not result.ok:
        report_diagnostics(result.diagnostics, result.sources, "human")
        click.echo("nothing was applied: fix the errors above first", err=True)
        sys.exit(EXIT_INVALID)
    return result


def check_clusters(result: Result, clusters: tuple[str, ...]) -> None:
    known = set(result.catalog.clusters)
    unknown = [c for c in clusters if c not in known]
    if unknown:
        fail(f"unknown cluster(s): {', '.join(unknown)} (known: {', '.join(sorted(known))})",
             EXIT_USAGE)


def _selector(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    from pincompile.selector import SelectorError, parse_selector

    if value is not None:
        try:
            parse_selector(value)
        except SelectorError as exc:
            raise click.BadParameter(str(exc)) from None
    return value


def target_options(func: F) -> F:
    """-p/--project and -l/--selector: narrow a command to some apps (with the
    KIND/PROJECT/NAME arguments, see :func:`targets_of`)."""
    func = click.option("-l", "--selector", metavar="SELECTOR", callback=_selector,
                        help="Only apps whose spec's metadata.labels match this label "
                             "selector (team=search,env!=prod,tier in (a,b),!legacy).")(func)
    return click.option("-p", "--project", metavar="PROJECT",
                        help="Only this project's apps.")(func)


def targets_of(args: tuple[str, ...], project: str | None, selector: str | None,
               root: bool = True) -> tuple[Path, Targets]:
    """``[ROOT] [KIND/PROJECT/NAME]...`` (a directory that exists is ROOT, default ``.``)
    with -p and -l, as (ROOT, the apps wanted); a usage error for anything else."""
    from pincompile.appref import AppRefError, parse_app_ref
    from pincompile.selector import Targets

    roots = [Path(a) for a in args if root and Path(a).is_dir()]
    if len(roots) > 1:
        raise click.UsageError(f"one ROOT only: {', '.join(map(str, roots))}")
    refs = []
    for arg in args:
        if roots and Path(arg) == roots[0]:
            continue
        try:
            refs.append(parse_app_ref(arg))
        except AppRefError as exc:
            hint = " (nor a directory)" if root else ""
            raise click.UsageError(f"{exc}{hint}") from None
    return (roots[0] if roots else Path(".")), Targets(refs, project, selector)


def check_targets(result: Result, wanted: Targets) -> None:
    """Exit 2 when an app KIND/PROJECT/NAME names is not among the compiled specs."""
    missing = sorted(wanted.refs - set(result.catalog.workloads_by_key))
    if missing:
        fail(f"no app {', '.join('/'.join(m) for m in missing)} in the specs", EXIT_USAGE)
