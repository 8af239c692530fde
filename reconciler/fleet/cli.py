"""``pincompile fleet``: a local fleet of official Kubernetes control planes on loopback."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from reconciler.fleet import build
from reconciler.fleet import fleet as fleet_mod
from reconciler.fleet.clusters import ClusterSpecError
from reconciler.fleet.errors import FleetError
from reconciler.fleet.processes import client_ssl_context, is_alive, probe

DEFAULT_CLUSTERS = "examples/platform"
EXIT_USAGE = 2
EXIT_FAILURE = 3


@contextmanager
def _errors() -> Iterator[None]:
    """Turn fleet failures into a clear message and exit code, never a traceback."""
    try:
        yield
    except ClusterSpecError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    except FleetError as exc:
        click.echo(f"error: {exc}", err=True)
        if exc.log_tail:
            click.echo("---- last lines of its log ----", err=True)
            click.echo(exc.log_tail, err=True)
            click.echo("-------------------------------", err=True)
        sys.exit(EXIT_FAILURE)
    except (OSError, RuntimeError, ValueError) as exc:
        if os.environ.get("PINCOMPILE_DEBUG"):
            raise
        click.echo(f"error: {type(exc).__name__}: {exc}", err=True)
        sys.exit(EXIT_FAILURE)
    except Exception as exc:  # e.g. kubernetes ApiException / urllib3 errors
        if os.environ.get("PINCOMPILE_DEBUG"):
            raise
        click.echo(f"error: {type(exc).__name__}: {exc}", err=True)
        sys.exit(EXIT_FAILURE)


def _resolve_clusters(path: str | None) -> Path:
    if path:
        return Path(path)
    here = Path(DEFAULT_CLUSTERS)
    if here.exists():
        return here
    repo = Path(__file__).resolve().parents[2] / DEFAULT_CLUSTERS
    if repo.exists():
        return repo
    raise click.UsageError(f"{DEFAULT_CLUSTERS} not found here; pass --clusters PATH")


def _echo() -> Callable[[str], None]:
    return lambda msg: click.echo(msg)


dir_option = click.option(
    "--dir", "directory", type=click.Path(file_okay=False, path_type=Path), default=None,
    help="Fleet state directory [default: ${PINCOMPILE_CACHE:-~/.cache/pincompile}/fleet].")


@click.group(name="fleet")
def fleet() -> None:
    """A local fleet of real Kubernetes control planes (on 127.0.0.1) with kwok nodes."""


@fleet.command("build")
@click.option("--force", is_flag=True, help="Rebuild even when cached binaries exist.")
def build_cmd(force: bool) -> None:
    """Only build (or find in the cache) the fleet's binaries."""
    with _errors():
        start = time.monotonic()
        path = build.ensure_binaries(echo=_echo(), force=force)
        vers = ", ".join(f"{k} {v}" for k, v in build.versions().items())
        click.echo(f"binaries ({vers}) in {path} [{time.monotonic() - start:.1f}s]")


@fleet.command("up")
@click.option("--clusters", "clusters", type=click.Path(exists=True, path_type=Path),
              default=None, help=f"File or folder with Cluster specs [default: "
                                 f"{DEFAULT_CLUSTERS}].")
@dir_option
def up_cmd(clusters: Path | None, directory: Path | None) -> None:
    """Start etcd, a host control plane and one control plane per Cluster spec."""
    path = _resolve_clusters(str(clusters) if clusters else None)
    with _errors():
        fleet_mod.up(path, directory, echo=_echo())


@fleet.command("down")
@dir_option
def down_cmd(directory: Path | None) -> None:
    """Stop every process the fleet started and remove its state."""
    with _errors():
        fleet_mod.down(directory, echo=_echo())


def _status(state: fleet_mod.FleetState) -> dict[str, Any]:
    pki = state.dir / "pki"
    ctx = None
    if (pki / "admin.crt").exists():
        ctx = client_ssl_context(pki / "ca.crt", pki / "admin.crt", pki / "admin.key")
    clusters = [{"name": c.name, "context": c.context, "server": c.server,
                 "ready": bool(ctx) and probe(f"{c.server}/readyz", ctx)}
                for c in state.clusters]
    procs = [{"name": p.name, "pid": p.pid, "alive": is_alive(p), "log": p.log}
             for p in state.procs]
    healthy = state.phase == "up" and all(p["alive"] for p in procs) and all(
        c["ready"] for c in clusters)
    return {"dir": str(state.dir), "phase": state.phase, "healthy": healthy,
            "kubeconfig": str(state.kubeconfig), "versions": state.versions,
            "clusters": clusters, "processes": procs}


@fleet.command("status")
@dir_option
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def status_cmd(directory: Path | None, as_json: bool) -> None:
    """Show whether the fleet runs, its contexts and processes (exit 3 when not up)."""
    with _errors():
        directory = Path(directory or fleet_mod.default_dir()).expanduser().resolve()
        state = fleet_mod.read_state(directory)
        if state is None:
            if as_json:
                click.echo(json.dumps({"dir": str(directory), "phase": "down",
                                       "healthy": False}))
            else:
                click.echo(f"fleet is down ({directory}); start it with: pincompile fleet up")
            sys.exit(EXIT_FAILURE)
        info = _status(state)
        if as_json:
            click.echo(json.dumps(info, indent=2))
        else:
            word = "up" if info["healthy"] else f"NOT healthy (phase {state.phase})"
            click.echo(f"fleet {word}: {state.dir}")
            click.echo(f"kubeconfig: {info['kubeconfig']}")
            vers = ", ".join(f"{k} {v}" for k, v in state.versions.items())
            click.echo(f"versions: {vers}")
            for c in info["clusters"]:
                mark = "ready" if c["ready"] else "NOT READY"
                click.echo(f"  {c['context']:<24} {c['server']:<26} {mark}")
            dead = [p for p in info["processes"] if not p["alive"]]
            click.echo(f"processes: {len(info['processes']) - len(dead)}/"
                       f"{len(info['processes'])} running")
            for p in dead:
                click.echo(f"  stopped: {p['name']} (pid {p['pid']}, log {p['log']})")
        if not info["healthy"]:
            sys.exit(EXIT_FAILURE)
