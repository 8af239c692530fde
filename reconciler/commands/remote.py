"""``pincompile get|logs|events|history``: reads through the PinCompute API
(``--server``/``$PINCOMPILE_SERVER``) with a bearer token, so a tenant needs neither a
kubeconfig nor to know which clusters its app landed in."""

from __future__ import annotations

import inspect
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from datetime import datetime
from pathlib import Path
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
from reconciler.api.models import AppDetail, AppEvent, PodList
from reconciler.commands.common import cluster_errors, usable_kubeconfig
from reconciler.commands.escapes import printable
from reconciler.commands.filters import did_you_mean
from reconciler.commands.interrupt import bounded_interrupt
from reconciler.commands.options import DURATION
from reconciler.commands.tables import columns, render_list

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
               store: str | None = None, max_age: float | None = None
               ) -> Iterator[tuple[ApiClient, Gateway | None]]:
    """A client of the API at ``server``; without one, of the same API run in this
    process on the kubeconfig's clusters (its gateway too, else None; ``max_age``: how
    old its list of the host's apps may get, for a command that watches)."""
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
                found = stack.enter_context(direct_api(path, host_context, store, timeout,
                                                       max_age))
            except NoSuchStore as exc:
                fail(f"--store: {exc}", EXIT_USAGE)
            except StoreError as exc:
                fail(f"--store: {exc}", EXIT_CLUSTER)
        yield found


def needs_store(api: dict[str, Any], what: str) -> None:
    """Without --server, what only ``serve`` samples is in its store alone: exit 2
    without --store."""
    if not api.get("server") and not api.get("store"):
        fail(f"{what} is kept by `pincompile serve`: pass --server URL (or set "
             "PINCOMPILE_SERVER), or --store URL to read its store", EXIT_USAGE)


@contextmanager
def api_errors(what: str, client: ApiClient | None = None) -> Iterator[None]:
    """One line and the documented exit code instead of a traceback (``client``: whether
    the API runs in this process, which the user never hears of)."""
    try:
        yield
    except (ServerUnreachable, ApiError) as exc:
        message, code = failure(what, exc, client)
        fail(message, code)


def failure(what: str, exc: ServerUnreachable | ApiError, client: ApiClient | None
            ) -> tuple[str, int]:
    """What to say of a call that failed, and the exit code: 1 not found, 2 usage, 3 the
    server or a cluster refused or did not answer. Without --server the API runs in this
    process: what failed is then a cluster, and no server is named."""
    in_process = client is not None and client.in_process
    if isinstance(exc, ServerUnreachable):
        if in_process:
            timeout = client.timeout if client is not None else 0
            return (f"{what}: the clusters did not answer within {timeout:g}s "
                    "(--timeout)"), EXIT_CLUSTER
        return f"server unreachable: {exc}", EXIT_CLUSTER
    if exc.status == 404:
        return f"{what}: {exc}", EXIT_INVALID
    if exc.status in (400, 422):
        return f"{what}: {exc}", EXIT_USAGE
    if in_process:
        return f"{what}: {exc}", EXIT_CLUSTER
    return f"{what}: the server answered {exc.status}: {exc}", EXIT_CLUSTER


def app_ref(_ctx: click.Context, _param: click.Parameter, value: str | None) -> AppRef | None:
    if value is None:
        return None
    try:
        return parse_app_ref(value)
    except AppRefError as exc:
        raise click.BadParameter(str(exc)) from None


def in_clusters(found: PodList, clusters: tuple[str, ...]) -> PodList:
    """The pods (and unreadable clusters) among ``clusters`` (all: none given)."""
    if not clusters:
        return found
    return PodList(items=[p for p in found.items if p.cluster in clusters],
                   unreadable=[u for u in found.unreadable if u.cluster in clusters])


def one_app(client: ApiClient, app: AppRef) -> AppDetail:
    """The app ``app`` names; not found: exit 1 with the closest app there is."""
    try:
        return client.app(*app)
    except ApiError as exc:
        if exc.status != 404:
            raise
        known = [f"{a.kind}/{a.project}/{a.name}" for a in client.apps()]
        fail(f"{app}: no such app{did_you_mean(str(app), known)}", EXIT_INVALID)
        raise


# -- logs -----------------------------------------------------------------------------------
@click.command("logs")
@click.argument("app", metavar="KIND/PROJECT/NAME", callback=app_ref)
@click.option("-c", "--container",
              help="Only this container: one of the spec's, a sidecar or an init container "
                   "(default: every pod's own containers).")
@click.option("--all-containers", is_flag=True,
              help="Also the sidecars and init containers the platform adds.")
@click.option("-f", "--follow", is_flag=True, help="Keep streaming new lines (Ctrl-C stops).")
@click.option("--since", type=DURATION, metavar="DURATION",
              help="Only lines newer than this (30s, 5m, 1h30m).")
@click.option("--tail", "tail", type=click.IntRange(0, 100_000), metavar="N",
              help="Only the last N lines of each container.")
@click.option("--cluster", help="Only pods in this member cluster.")
@click.option("--pod", help="Only this pod.")
@click.option("--timestamps", is_flag=True, help="Start each line with its RFC 3339 time.")
@api_options
def logs(app: AppRef, container: str | None, all_containers: bool, follow: bool,
         since: float | None, tail: int | None, cluster: str | None, pod: str | None,
         timestamps: bool, **api: Any) -> None:
    """Print the logs of every container of an app, in every member cluster it runs in,
    merged as they come; each line starts with CLUSTER/POD/CONTAINER. On a terminal,
    escape sequences and control characters in the lines are left out (a pipe or a file
    gets them as they were).

    Through the API your token needs `get` on the app's `logs` subresource in its project
    (see docs/api/README.md); straight to the clusters, the kubeconfig's user needs `get`
    on `pods/log` in the member clusters. The API bounds a stream's length and how many
    you have open.

    \b
    Examples:
      pincompile logs PinApp/search/search-api --tail 20
      pincompile logs PinApp/search/search-api -f -c main --cluster use1a-general-01
      pincompile logs PinApp/search/search-api -c traffic      # a sidecar
      pincompile logs PinApp/search/search-api --all-containers --tail 5
      pincompile logs PinApp/search/search-api --since 10m | grep ERROR
    """
    terminal = sys.stdout.isatty()  # a log line's escape sequences are not obeyed there
    try:
        with bounded_interrupt(EXIT_OK), api_client(**api) as (client, _), \
                api_errors(str(app), client):
            for line in client.logs(*app, container=container, follow=follow,
                                    since_seconds=None if since is None else max(1, round(since)),
                                    tail_lines=tail, cluster=cluster, pod=pod,
                                    timestamps=timestamps or None,
                                    all_containers=all_containers or None):
                sys.stdout.buffer.write(printable(line) if terminal else line)
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
@click.option("-w", "--watch", is_flag=True,
              help="After the timeline, print each new event as it comes (Ctrl-C stops).")
@api_options
@store_option
def events(app: AppRef, fmt: str, watch: bool, **api: Any) -> None:
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
      pincompile events PinApp/search/search-api -w
    """
    header = ["TIME", "TYPE", "REASON", "CLUSTER", "COUNT", "OBJECT", "MESSAGE"]

    def row(e: AppEvent) -> list[Any]:
        return [_utc(e.time), e.type, e.reason, e.cluster or "-", e.count, e.object or "-",
                e.message]

    with bounded_interrupt(EXIT_OK), api_client(**api) as (client, _), \
            api_errors(str(app), client):
        found = client.events(*app)
        if not watch:
            _records("EventList", found, fmt, header, row, f"{app}: no events",
                     truncate=("MESSAGE", "OBJECT"), drop=("COUNT", "OBJECT", "CLUSTER"))
        with suppress(KeyboardInterrupt):
            _follow(client, app, found, fmt, row)
    sys.exit(EXIT_OK)


def _follow(client: ApiClient, app: AppRef, found: list[AppEvent], fmt: str,
            row: Callable[[AppEvent], list[Any]]) -> None:
    """``events -w``: what is there, then every event new or seen again, one line each
    (one JSON document a line with ``-o json``), asking every 2 seconds."""
    seen: set[str] = set()
    while True:
        for event in found:
            key = event.model_dump_json()
            if key in seen:
                continue
            seen.add(key)
            click.echo(key if fmt == "json" else "   ".join(str(c) for c in row(event)))
        sys.stdout.flush()
        time.sleep(2.0)
        found = client.events(*app)


@click.command("history")
@click.argument("app", metavar="KIND/PROJECT/NAME", callback=app_ref)
@click.option("-n", "--limit", type=click.IntRange(1, 1000), default=None, metavar="N",
              help="Only the newest N revisions.")
@click.option("--diff", "between", metavar="FROM[..TO]",
              help="Instead: what changed in the app's spec between two revisions of the "
                   "spec repository (TO: the working tree when left out), read with git "
                   "in --root.")
@click.option("-C", "--root", "root", default=".", show_default=True,
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="With --diff: the spec tree (in the spec repository's work tree).")
@output_option("table", "wide", "json", "yaml")
@api_options
@store_option
def history(app: AppRef, limit: int | None, between: str | None, root: Path, fmt: str,
            **api: Any) -> None:
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
      pincompile history PinApp/search/search-api --diff 4f2c9e1a0b7d..HEAD
      pincompile rollback PinApp/search/search-api --to 4f2c9e1a0b7d
    """
    if between is not None:
        from reconciler.commands.spec_diff import print_spec_diff

        print_spec_diff(app, between, root)
    with api_client(**api) as (client, _), api_errors(str(app), client):
        found = client.history(*app, limit=limit or 1000)
    _records("RevisionList", found, fmt,
             ["APPLIED", "REVISION", "RESULT", "AUTHOR", "PUSH", "DETAIL"],
             lambda r: [_utc(r.appliedAt), short_revision(r.revision), r.result or "-",
                        r.author or "-", r.push or "-", r.detail],
             f"{app}: no revisions", truncate=("DETAIL", "AUTHOR"), drop=("PUSH", "AUTHOR"),
             keep=("REVISION",))


def short_revision(revision: str) -> str:
    """A commit as git abbreviates it (12 characters), ``-dirty`` kept."""
    sha, dirty, _ = revision.partition("-dirty")
    return sha[:12] + dirty


def _utc(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _records(kind: str, found: Sequence[Model], fmt: str, header: list[str],
             row: Callable[[Model], list[Any]], none: str, **fit: Sequence[str]) -> None:
    """``events``' and ``history``'s output: the API's documents (json, yaml) or a table
    (``fit``: how it fits the terminal, see :func:`columns`); exit 0."""
    if fmt in ("json", "yaml"):
        click.echo(render_list(kind, [r.model_dump(mode="json") for r in found], fmt))
    elif found:
        click.echo(columns([header] + [row(r) for r in found], table_width(fmt), **fit))
    else:
        click.echo(none, err=True)
    sys.exit(EXIT_OK)


for _command in (logs, events, history):
    _command.help = f"{inspect.cleandoc(_command.help or '')}\n\n{SERVER_HELP}\n\n{EXIT_CODES}"
