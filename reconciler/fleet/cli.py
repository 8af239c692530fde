"""``pincompile fleet``: a local fleet of official Kubernetes control planes on loopback."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from pincompile.contract import to_yaml
from reconciler.commands.options import Duration
from reconciler.fleet import build, control, load, profiles
from reconciler.fleet import fleet as fleet_mod
from reconciler.fleet.clusters import ClusterSpecError
from reconciler.fleet.errors import FleetError
from reconciler.fleet.health import NodeHealth, node_health
from reconciler.fleet.processes import client_ssl_context, is_alive, probe
from reconciler.fleet.progress import StatusLine

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


dir_option = click.option(
    "--dir", "directory", type=click.Path(file_okay=False, path_type=Path), default=None,
    help="Fleet state directory [default: ${PINCOMPILE_CACHE:-~/.cache/pincompile}/fleet].")


@click.group(name="fleet")
def fleet() -> None:
    """A local fleet of real Kubernetes control planes (on 127.0.0.1) with kwok nodes.

    \b
    Typical use:
      pincompile fleet up                    # build once (needs Go), start examples/platform
      export KUBECONFIG=~/.cache/pincompile/fleet/kubeconfig
      pincompile fleet status                # nodes Ready per cluster (exit 3 if not)
      pincompile fleet stop-cluster use1a-general-01    # simulate losing a cluster
      pincompile fleet start-cluster use1a-general-01   # and getting it back
      pincompile fleet load PinApp/search/search-api --cpu 90% --for 5m
      pincompile fleet down

    Nodes stay Ready while the fleet runs: kwok renews one Lease per node, as a kubelet
    does. Pods whose image tag ends in -never-ready run but never turn Ready (a broken
    release).
    """


@fleet.command("build")
@click.option("--force", is_flag=True, help="Rebuild even when cached binaries exist.")
def build_cmd(force: bool) -> None:
    """Only build (or find in the cache) the fleet's binaries.

    The first build compiles Kubernetes (minutes); it shows what is compiled and the time
    elapsed (one updating line on a terminal, a line every 30 s otherwise).
    """
    with _errors():
        start = time.monotonic()
        out = StatusLine()
        try:
            path = build.ensure_binaries(echo=out.echo, force=force, progress=out.status,
                                         every=out.every)
        finally:
            out.close()
        vers = ", ".join(f"{k} {v}" for k, v in build.versions().items())
        click.echo(f"binaries ({vers}) in {path} [{time.monotonic() - start:.1f}s]")


@fleet.command("up")
@click.option("--clusters", "clusters", type=click.Path(exists=True, path_type=Path),
              default=None, help=f"File or folder with Cluster specs [default: "
                                 f"{DEFAULT_CLUSTERS}].")
@dir_option
@click.option("--profile", type=click.Choice(profiles.NAMES), envvar=profiles.ENV,
              default=profiles.DEFAULT, show_default=True, show_envvar=True,
              help="Controller timers: Kubernetes' defaults, or `test`: short ones (node "
                   "grace 20s, HPA sync 5s and downscale window 30s, eviction after 30s).")
def up_cmd(clusters: Path | None, directory: Path | None, profile: str) -> None:
    """Start etcd, a host control plane and one control plane per Cluster spec.

    \b
    Examples:
      pincompile fleet up
      pincompile fleet up --clusters tests/e2e/fixtures/clusters --dir /tmp/fleet
      pincompile fleet up --profile test     # short controller timers, for tests
    """
    path = _resolve_clusters(str(clusters) if clusters else None)
    with _errors():
        out = StatusLine()
        try:
            fleet_mod.up(path, directory, echo=out.echo, progress=out.status,
                         every=out.every, profile=profile)
        finally:
            out.close()


@fleet.command("down")
@dir_option
def down_cmd(directory: Path | None) -> None:
    """Stop every process the fleet started and remove its state."""
    with _errors():
        fleet_mod.down(directory, echo=lambda msg: click.echo(msg))


def _load(directory: Path | None) -> fleet_mod.FleetState:
    directory = Path(directory or fleet_mod.default_dir()).expanduser().resolve()
    state = fleet_mod.read_state(directory)
    if state is None:
        raise FleetError(f"no fleet in {directory}; start it with: pincompile fleet up")
    return state


def _status(state: fleet_mod.FleetState) -> dict[str, Any]:
    pki = state.dir / "pki"
    ctx = None
    if (pki / "admin.crt").exists():
        ctx = client_ssl_context(pki / "ca.crt", pki / "admin.crt", pki / "admin.key")
    clusters = []
    for c in state.clusters:
        ready = bool(ctx) and probe(f"{c.server}/readyz", ctx)
        nodes = NodeHealth(cluster=c.name, reachable=False, error="API server not ready")
        if ready:
            api = fleet_mod.api_client(state, c.context)
            try:
                nodes = node_health(api, c.name)
            finally:
                api.close()
        clusters.append({"name": c.name, "context": c.context, "server": c.server,
                         "ready": ready, "nodes": nodes.to_json(),
                         "summary": nodes.summary(), "healthy": ready and nodes.healthy})
    procs = [{"name": p.name, "pid": p.pid, "alive": is_alive(p), "log": p.log}
             for p in state.procs]
    healthy = state.phase == "up" and all(p["alive"] for p in procs) and all(
        c["healthy"] for c in clusters)
    return {"dir": str(state.dir), "phase": state.phase, "healthy": healthy,
            "profile": state.profile, "kubeconfig": str(state.kubeconfig),
            "versions": state.versions,
            "clusters": clusters, "processes": procs}


def _indented(text: str) -> str:
    return "\n".join(f"  {line}" for line in text.splitlines())


def _print_table(state: fleet_mod.FleetState, info: dict[str, Any]) -> None:
    word = "up" if info["healthy"] else f"NOT healthy (phase {state.phase})"
    click.echo(f"fleet {word}: {state.dir}")
    click.echo(f"kubeconfig: {info['kubeconfig']}")
    vers = ", ".join(f"{k} {v}" for k, v in state.versions.items())
    click.echo(f"versions: {vers}")
    click.echo(f"profile: {state.timers.describe()}")
    from reconciler.commands.tables import columns, table_width

    width = table_width("table")
    click.echo(_indented(columns([["CONTEXT", "SERVER", "API", "NODES"]] + [
        [c["context"], c["server"], "ready" if c["ready"] else "NOT READY", c["summary"]]
        for c in info["clusters"]], width and width - 2, keep=("CONTEXT",))))
    dead = [p for p in info["processes"] if not p["alive"]]
    click.echo(f"processes: {len(info['processes']) - len(dead)}/"
               f"{len(info['processes'])} running")
    for p in dead:
        click.echo(f"  stopped: {p['name']} (pid {p['pid']}, log {p['log']})")


@fleet.command("status")
@dir_option
@click.option("-o", "--output", type=click.Choice(["table", "json", "yaml"]),
              default="table", show_default=True, help="Output format.")
@click.option("--json", "as_json", is_flag=True, help="Same as -o json.")
def status_cmd(directory: Path | None, output: str, as_json: bool) -> None:
    """Show, per cluster, whether its API server answers, how many nodes are Ready and the
    age of the oldest node Lease renewal; and which fleet processes run.

    Exit code 0 when every process runs and every node of every cluster is Ready, 3
    otherwise (also when the fleet is down). A Lease renewal older than the Lease duration
    (40 s; 12 s under the test profile) means that cluster's kwok stopped; its nodes go
    NotReady a grace period (50 s; 20 s) after the last renewal.

    \b
    Examples:
      pincompile fleet status
      pincompile fleet status -o json | jq '.clusters[] | {name, nodes}'
    """
    output = "json" if as_json else output
    with _errors():
        directory = Path(directory or fleet_mod.default_dir()).expanduser().resolve()
        state = fleet_mod.read_state(directory)
        if state is None:
            if output != "table":
                _dump({"dir": str(directory), "phase": "down", "healthy": False}, output)
            else:
                click.echo(f"fleet is down ({directory}); start it with: pincompile fleet up")
            sys.exit(EXIT_FAILURE)
        info = _status(state)
        if output != "table":
            _dump(info, output)
        else:
            _print_table(state, info)
        if not info["healthy"]:
            sys.exit(EXIT_FAILURE)


def _dump(data: dict[str, Any], output: str) -> None:
    if output == "json":
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(to_yaml(data), nl=False)


cluster_arg = click.argument("cluster")
component_option = click.option(
    "--component", type=click.Choice(fleet_mod.COMPONENTS), default="kube-apiserver",
    show_default=True, help="What to stop or start: the API server makes the cluster "
    "unreachable; kwok makes its nodes go NotReady after the node controller's grace period.")


@fleet.command("stop-cluster")
@cluster_arg
@component_option
@dir_option
def stop_cluster_cmd(cluster: str, component: str, directory: Path | None) -> None:
    """Stop one cluster's API server (or another component) to simulate losing it.

    \b
    Examples:
      pincompile fleet stop-cluster use1a-general-01               # unreachable now
      pincompile fleet stop-cluster use1a-general-01 --component kwok  # nodes NotReady in ~50s
    """
    with _errors():
        state = _load(directory)
        control.stop_component(state, cluster, component)
        click.echo(f"stopped {component} of {cluster}; undo: pincompile fleet start-cluster "
                   f"{cluster}" + (f" --component {component}"
                                   if component != "kube-apiserver" else ""))


@fleet.command("start-cluster")
@cluster_arg
@component_option
@dir_option
def start_cluster_cmd(cluster: str, component: str, directory: Path | None) -> None:
    """Start what stop-cluster stopped (same port, arguments and certificates).

    \b
    Example:
      pincompile fleet start-cluster use1a-general-01
    """
    with _errors():
        state = _load(directory)
        start = time.monotonic()
        control.start_component(state, cluster, component)
        click.echo(f"{component} of {cluster} ready in {time.monotonic() - start:.1f}s")


@fleet.command("load")
@click.argument("app", metavar="KIND/PROJECT/NAME")
@click.option("--cpu", metavar="PERCENT", help="CPU usage of each container, as a share "
              "of its CPU request (e.g. 90%).")
@click.option("--memory", metavar="PERCENT", help="Memory usage, as a share of the request.")
@click.option("--reset", is_flag=True, help="Back to the default usage (30% CPU, 40% "
              "memory) for the resources named, or both when none is.")
@click.option("--cluster", default=None, help="Only this member cluster [default: every "
              "cluster that runs the app].")
@click.option("--for", "duration", type=Duration(), default=None,
              help="Only for this long (e.g. 5m), then back to the default usage.")
@dir_option
def load_cmd(app: str, cpu: str | None, memory: str | None, reset: bool, cluster: str | None,
             duration: float | None, directory: Path | None) -> None:
    """Set the emulated CPU / memory usage of an app's pods, as metrics-server and so the
    HPA controller and `kubectl top` see it (from the next scrape, within 15 s).

    It applies to every pod of the app in the cluster, including those started later.
    Exit code 1 when no pod of the app runs there, 2 for a bad argument.

    \b
    Examples:
      pincompile fleet load PinApp/search/search-api --cpu 90%
      pincompile fleet load PinterestService/ads/ads-serving --cpu 10% --cluster use1a-general-01
      pincompile fleet load PinApp/search/search-api --cpu 95% --for 5m
      pincompile fleet load PinApp/search/search-api --reset
    """
    try:
        ref = load.parse_app(app)
        usage: dict[str, float | None] = {}
        for resource, value in (("cpu", cpu), ("memory", memory)):
            if value is not None:
                usage[resource] = None if reset else load.parse_fraction(value)
        if reset and not usage:
            usage = dict.fromkeys(load.RESOURCES)
    except load.LoadError as exc:
        raise click.UsageError(str(exc)) from exc
    if not usage:
        raise click.UsageError("give --cpu and/or --memory (or --reset)")
    if reset and duration:
        raise click.UsageError("--for does not go with --reset")
    with _errors():
        state = _load(directory)
        try:
            done = load.set_load(state, ref, usage, cluster=cluster, duration=duration)
        except load.LoadError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(1)
        what = ", ".join(f"{r} {'default' if f is None else f'{f:.0%}'}"
                         for r, f in usage.items())
        span = f" for {duration:g}s" if duration else ""
        for entry in done:
            click.echo(f"{entry.cluster}: {ref} ({entry.pods} pods now) uses {what}{span}")
