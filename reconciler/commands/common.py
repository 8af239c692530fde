"""What the reconciler's commands share: finding the kubeconfig, compiling first, options."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from pincompile.commands.common import EXIT_INVALID, EXIT_USAGE, fail
from pincompile.commands.common import report as report_diagnostics
from pincompile.pipeline import Result, compile_path

F = TypeVar("F", bound=Callable[..., Any])


def default_kubeconfig() -> str | None:
    """``$KUBECONFIG``; else the running local fleet's kubeconfig; else ~/.kube/config."""
    if os.environ.get("KUBECONFIG"):
        return os.environ["KUBECONFIG"]
    from reconciler.fleet import fleet

    state = fleet.read_state(fleet.default_dir())
    if state is not None and fleet.is_running(state):
        return str(state.kubeconfig)
    return None


def cluster_options(func: F) -> F:
    """--kubeconfig, --host-context and --cluster."""
    func = click.option("--cluster", "clusters", multiple=True, metavar="NAME",
                        help="Only this member cluster (repeatable).")(func)
    func = click.option("--host-context", default="host", show_default=True,
                        help="kubeconfig context of the host cluster (holds specs and "
                             "status).")(func)
    return click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None,
                        help="kubeconfig (default: $KUBECONFIG, else the running local "
                             "fleet's, else ~/.kube/config).")(func)


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
