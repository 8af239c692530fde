"""``pincompile get|logs|events|history``: reads through the PinCompute API
(``--server``/``$PINCOMPILE_SERVER``) with a bearer token, so a tenant needs neither a
kubeconfig nor to know which clusters its app landed in."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

import click
from pydantic import BaseModel

from pincompile.appref import AppRef, AppRefError, parse_app_ref
from pincompile.commands.common import (
    EXIT_CLUSTER,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_USAGE,
    fail,
    output_option,
    table_width,
)
from reconciler.api.client import ApiClient, ApiError, ServerUnreachable
from reconciler.api.models import AppSummary, PodList
from reconciler.commands.common import cluster_errors, target_options, usable_kubeconfig
from reconciler.commands.interrupt import bounded_interrupt
from reconciler.commands.options import DURATION
from reconciler.commands.status import age, columns, render, render_table

if TYPE_CHECKING:
    from reconciler.api.app import Gateway

F = TypeVar("F", bound=Callable[..., Any])
Model = TypeVar("Model", bound=BaseModel)

EXIT_CODES = """\b
Exit codes: 0 ok, 1 not found (no such app, or no container matches), 2 usage (a bad
argument, a kubeconfig that cannot be used), 3 the server or a cluster is unreachable or
refused the call (401 token not accepted, 403 not allowed, 429 rate-limited, 5xx)."""

SERVER_HELP = """\b
Two ways in, the same output and exit codes:
  through the PinCompute API, when --server or $PINCOMPILE_SERVER is set (`pincompile
    serve`'s address, e.g. http://pincompute.internal:8080): the token (--token or
    $PINCOMPILE_TOKEN) is a Kubernetes bearer token the host cluster accepts, e.g.
    `kubectl create token NAME -n NAMESPACE`; it is sent only to the server, which
    authorizes each call against the host's RBAC.
  straight to the clusters otherwise: the kubeconfig (--kubeconfig, $KUBECONFIG, else
    the running local fleet's) with its --host-context and the member clusters'
    contexts the host's Cluster resources name; the same code the server runs, in this
    process, each cluster's API server authorizing the kubeconfig's own credentials
    (listing apps needs `list` on the app kinds across the host's namespaces)."""


def api_options(command: F) -> F:
    """--server, --token, --timeout, --ca-file, --insecure-skip-tls-verify (through the
    API); --kubeconfig, --host-context (straight to the clusters)."""
    for option in reversed([
        click.option("--server", envvar="PINCOMPILE_SERVER", metavar="URL",
                     help="The PinCompute API (default: $PINCOMPILE_SERVER; unset: "
                          "straight to the clusters)."),
        click.option("--token", envvar="PINCOMPILE_TOKEN", metavar="TOKEN",
                     show_envvar=False,
                     help="Bearer token (default: $PINCOMPILE_TOKEN; never printed)."),
        click.option("--timeout", type=DURATION, default="15s", show_default=True,
                     help="How long to wait for an answer (log streams: to connect)."),
        click.option("--ca-file", type=click.Path(dir_okay=False, exists=True),
                     help="CA bundle that signed the server's certificate (https)."),
        click.option("--insecure-skip-tls-verify", "insecure", is_flag=True,
                     help="Do not check the server's certificate (https; testing only)."),
        click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None,
                     help="Without --server: kubeconfig (default: $KUBECONFIG, else the "
                          "running local fleet's, else ~/.kube/config)."),
        click.option("--host-context", default="host", show_default=True,
                     help="Without --server: kubeconfig context of the host cluster."),
    ]):
        command = option(command)
    return command


def store_option(command: F) -> F:
    """--store: the insight store ``serve`` keeps, read (and written by the actions)
    without --server."""
    return click.option("--store", "store", metavar="URL",
                        help="Without --server: also the insight store `pincompile serve "
                             "--store` keeps (sqlite:///PATH or postgresql://...; it must "
                             "exist).")(command)


@contextmanager
def api_client(server: str | None, token: str | None, timeout: float, ca_file: str | None,
               insecure: bool, kubeconfig: str | None, host_context: str,
               store: str | None = None) -> Iterator[tuple[ApiClient, Gateway | None]]:
    """A client of the API at ``server``; without one, of the same API run in this
    process on the kubeconfig's clusters (its gateway too, else None)."""
    if server:
        if not server.startswith(("http://", "https://")):
            fail(f"--server {server[:100]!r}: give a URL, http://HOST:PORT or "
                 "https://HOST:PORT", EXIT_USAGE)
        yield ApiClient(server, token, timeout=timeout, ca_file=ca_file,
                        insecure=insecure), None
        return
    from reconciler.commands.direct import direct_api
    from reconciler.store import NoSuchStore, StoreError

    path = usable_kubeconfig(kubeconfig, host_context)
    with ExitStack() as stack:
        with cluster_errors():
            try:
                found = stack.enter_context(direct_api(path, host_context, store, timeout))
            except NoSuchStore as exc:
                fail(f"--store: {exc}", EXIT_USAGE)
            except StoreError as exc:
                fail(f"--store: {exc}", EXIT_CLUSTER)
        yield found


@contextmanager
def api_errors(what: str) -> Iterator[None]:
    """One line and the documented exit code instead of a traceback."""
    try:
        yield
    except ServerUnreachable as exc:
        fail(f"server unreachable: {exc}", EXIT_CLUSTER)
    except ApiError as exc:
        if exc.status == 404:
            fail(f"{what}: {exc}", EXIT_INVALID)
        if exc.status in (400, 422):
            fail(f"{what}: {exc}", EXIT_USAGE)
        fail(f"{what}: the server answered {exc.status}: {exc}", EXIT_CLUSTER)


def app_ref(_ctx: click.Context, _param: click.Parameter, value: str | None) -> AppRef | None:
    if value is None:
        return None
    try:
        return parse_app_ref(value)
    except AppRefError as exc:
        raise click.BadParameter(str(exc)) from None


# -- get ------------------------------------------------------------------------------------
@click.command("get")
@click.argument("resource", type=click.Choice(["apps", "pods"]))
@click.argument("app", required=False, metavar="[KIND/PROJECT/NAME]", callback=app_ref)
@target_options
@click.option("-k", "--kind", help="Only apps of this kind (PinApp, PinterestService, ...).")
@click.option("--phase", help="Only apps in this phase (Healthy, Degraded, ...).")
@click.option("--cluster", help="Only apps placed in this member cluster.")
@output_option("table", "wide", "json", "yaml", "name")
@api_options
def get(resource: str, app: AppRef | None, project: str | None, selector: str | None,
        kind: str | None, phase: str | None, cluster: str | None, fmt: str,
        **api: Any) -> None:
    """List apps, or pods of apps, that you may see (through the PinCompute API, or
    straight from the clusters: see below).

    \b
    apps: one row per app: phase, ready/desired per cluster, rollout, failover, revision.
    pods: every pod of the apps in every member cluster: node, phase, ready containers,
          restarts, and why a container last ended (OOMKilled, Error, ...).
    -p, -k, --phase, --cluster and -l narrow the list (all must hold; not with
    KIND/PROJECT/NAME, which names one app); -l matches the labels of the app's spec
    (metadata.labels) with a Kubernetes label selector.
    -o table fits the terminal, -o wide keeps whole lines (and adds images and
    container states to pods), -o name prints KIND/PROJECT/NAME (pods:
    CLUSTER/NAMESPACE/POD), -o json|yaml the API's documents.

    \b
    Examples:
      pincompile get apps
      pincompile get apps -p search --phase Degraded
      pincompile get apps -l 'team=search,tier in (web,api)' -o name
      pincompile get pods PinApp/search/search-api -o wide
      pincompile get pods -p search
    """
    if app is not None and any((project, selector, kind, phase, cluster)):
        raise click.UsageError(f"{app} names one app: -p, -l, -k, --phase and --cluster "
                               "narrow a list of apps; give either")
    with api_client(**api) as (client, _), api_errors(str(app) if app else resource):
        if app is not None:
            apps: list[AppSummary] = [client.app(*app)]
        else:
            apps = client.apps(project=project, kind=kind, phase=phase, cluster=cluster,
                               selector=selector)
        if resource == "apps":
            text = _apps_text(apps, fmt)
        else:
            pods = [(summary, client.pods(summary.kind, summary.project, summary.name))
                    for summary in apps]
            text = _pods_text(pods, fmt)
    if text:  # `-o name` of nothing prints nothing, as kubectl does
        click.echo(text)
    sys.exit(EXIT_OK)


def _apps_text(apps: list[AppSummary], fmt: str) -> str:
    if fmt == "name":
        return "\n".join(f"{a.kind}/{a.project}/{a.name}" for a in apps)
    if fmt in ("json", "yaml"):
        return render([a.model_dump(mode="json") for a in apps], fmt)
    rows = [{"kind": a.kind, "project": a.project, "name": a.name,
             "status": a.model_dump(mode="json")} for a in apps]
    return render_table(rows, width=table_width(fmt))


def _pods_text(pods: list[tuple[AppSummary, PodList]], fmt: str) -> str:
    if fmt == "name":
        return "\n".join(f"{p.cluster}/{p.namespace}/{p.name}" for _, found in pods
                         for p in found.items)
    if fmt in ("json", "yaml"):
        return render([{"app": f"{a.kind}/{a.project}/{a.name}",
                        **found.model_dump(mode="json")} for a, found in pods], fmt)
    wide = fmt == "wide"
    table: list[list[Any]] = [["APP", "CLUSTER", "POD", "NODE", "PHASE", "READY", "RESTARTS",
                               "AGE", *(["CONTAINERS"] if wide else []), "LAST-TERMINATION"]]
    problems = []
    for app, found in pods:
        for pod in found.items:
            last = ", ".join(f"{c.name}: {c.lastTerminationReason}"
                             + (f" (exit {c.lastTerminationExitCode})"
                                if c.lastTerminationExitCode is not None else "")
                             for c in pod.containers if c.lastTerminationReason)
            states = " ".join(f"{c.name}={c.state}" + (f"({c.reason})" if c.reason else "")
                              + f"[{c.image}]" for c in pod.containers)
            table.append([f"{app.kind}/{app.project}/{app.name}", pod.cluster, pod.name,
                          pod.node or "-", pod.phase, pod.ready, pod.restarts,
                          age(pod.created), *([states] if wide else []), last or "-"])
        problems += [f"{app.kind}/{app.project}/{app.name}: {p.cluster}: {p.message}"
                     for p in found.unreadable]
    text = columns(table, table_width(fmt), truncate=("LAST-TERMINATION", "POD"),
                   drop=("NODE", "AGE", "RESTARTS")) if len(table) > 1 else "no pods"
    return text + "".join(f"\nunreadable: {line}" for line in problems)


# -- logs -----------------------------------------------------------------------------------
@click.command("logs")
@click.argument("app", metavar="KIND/PROJECT/NAME", callback=app_ref)
@click.option("-c", "--container", help="Only this container (default: every container).")
@click.option("-f", "--follow", is_flag=True, help="Keep streaming new lines (Ctrl-C stops).")
@click.option("--since", type=DURATION, metavar="DURATION",
              help="Only lines newer than this (30s, 5m, 1h30m).")
@click.option("--tail", "tail", type=click.IntRange(0, 100_000), metavar="N",
              help="Only the last N lines of each container.")
@click.option("--cluster", help="Only pods in this member cluster.")
@click.option("--pod", help="Only this pod.")
@click.option("--timestamps", is_flag=True, help="Start each line with its RFC 3339 time.")
@api_options
def logs(app: AppRef, container: str | None, follow: bool, since: float | None,
         tail: int | None, cluster: str | None, pod: str | None, timestamps: bool,
         **api: Any) -> None:
    """Print the logs of every container of an app, in every member cluster it runs in,
    merged as they come; each line starts with CLUSTER/POD/CONTAINER.

    Through the API your token needs `get` on the app's `logs` subresource in its project
    (see docs/api/README.md); straight to the clusters, the kubeconfig's user needs `get`
    on `pods/log` in the member clusters. The API bounds a stream's length and how many
    you have open.

    \b
    Examples:
      pincompile logs PinApp/search/search-api --tail 20
      pincompile logs PinApp/search/search-api -f -c main --cluster use1a-general-01
      pincompile logs PinApp/search/search-api --since 10m | grep ERROR
    """
    try:
        with bounded_interrupt(EXIT_OK), api_client(**api) as (client, _), \
                api_errors(str(app)):
            for line in client.logs(*app, container=container, follow=follow,
                                    since_seconds=None if since is None else max(1, round(since)),
                                    tail_lines=tail, cluster=cluster, pod=pod,
                                    timestamps=timestamps or None):
                sys.stdout.buffer.write(line)
                if follow:
                    sys.stdout.buffer.flush()
    except KeyboardInterrupt:
        pass
    except BrokenPipeError:  # | head
        sys.stderr.close()
    sys.exit(EXIT_OK)


# -- events, history ------------------------------------------------------------------------
@click.command("events")
@click.argument("app", metavar="KIND/PROJECT/NAME", callback=app_ref)
@output_option("table", "wide", "json", "yaml")
@api_options
@store_option
def events(app: AppRef, fmt: str, **api: Any) -> None:
    """An app's timeline, oldest first: pincompile's own Events (applied, pruned, rollout
    halted, failed over, phase changes) and the Kubernetes Events of its objects in every
    member cluster (its pods scheduled, pulled, killed; its Deployment scaling; its HPA
    rescaling; its Jobs completing).

    Without --server they are read now from the host and the member clusters, as long as
    their API servers keep Events (an hour by default); --store URL adds what `pincompile
    serve` kept in its insight store beyond that. Through the API, the server's store
    has them all.

    \b
    Examples:
      pincompile events PinApp/search/search-api
      pincompile events PinApp/search/search-api -o wide | grep Warning
    """
    with api_client(**api) as (client, _), api_errors(str(app)):
        found = client.events(*app)
    _records(found, fmt, ["TIME", "TYPE", "REASON", "CLUSTER", "COUNT", "OBJECT", "MESSAGE"],
             lambda e: [_utc(e.time), e.type, e.reason, e.cluster or "-", e.count,
                        e.object or "-", e.message], f"{app}: no events",
             truncate=("MESSAGE", "OBJECT"), drop=("COUNT", "OBJECT", "CLUSTER"))


@click.command("history")
@click.argument("app", metavar="KIND/PROJECT/NAME", callback=app_ref)
@click.option("-n", "--limit", type=click.IntRange(1, 1000), default=None, metavar="N",
              help="Only the newest N revisions.")
@output_option("table", "wide", "json", "yaml")
@api_options
@store_option
def history(app: AppRef, limit: int | None, fmt: str, **api: Any) -> None:
    """The revisions applied to an app, newest first: when, which commit, and the app's
    phase while it was the current one (the last it had, once replaced).

    Every pass (`pincompile apply` and `serve` alike) keeps the app's last 10 revisions
    on its resource on the host (status.history, as Argo CD does); `serve`'s insight
    store keeps every one beyond that, with the author and the push that triggered it
    (through the API, or --store URL without --server).

    \b
    Examples:
      pincompile history PinApp/search/search-api
      pincompile history PinApp/search/search-api -n 3 -o json
    """
    with api_client(**api) as (client, _), api_errors(str(app)):
        found = client.history(*app, limit=limit or 1000)
    _records(found, fmt, ["APPLIED", "REVISION", "RESULT", "COMMIT", "AUTHOR", "PUSH", "DETAIL"],
             lambda r: [_utc(r.appliedAt), r.revision[:12], r.result or "-",
                        r.commit[:12] or "-", r.author or "-", r.push or "-", r.detail],
             f"{app}: no revisions", truncate=("DETAIL", "AUTHOR"),
             drop=("PUSH", "COMMIT", "AUTHOR"))


def _utc(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _records(found: Sequence[Model], fmt: str, header: list[str],
             row: Callable[[Model], list[Any]], none: str, **fit: Sequence[str]) -> None:
    """``events``' and ``history``'s output: the API's documents (json, yaml) or a table
    (``fit``: how it fits the terminal, see :func:`columns`); exit 0."""
    if fmt in ("json", "yaml"):
        click.echo(render([r.model_dump(mode="json") for r in found], fmt))
    elif found:
        click.echo(columns([header] + [row(r) for r in found], table_width(fmt), **fit))
    else:
        click.echo(none, err=True)
    sys.exit(EXIT_OK)


for _command in (get, logs, events, history):
    _command.help = f"{inspect.cleandoc(_command.help or '')}\n\n{SERVER_HELP}\n\n{EXIT_CODES}"
