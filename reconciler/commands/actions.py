"""``pincompile restart|rollout pause|rollout resume|rerun``: actions on an app's running
workloads through the PinCompute API (``--server``), never its desired state."""

from __future__ import annotations

import inspect
import json
import sys
from typing import TYPE_CHECKING, Any

import click
import yaml

from pincompile.appref import AppRef
from pincompile.commands.common import (
    EXIT_CLUSTER,
    EXIT_INVALID,
    EXIT_OK,
    fail,
    output_option,
)
from reconciler.api.client import ApiClient, ApiError, ServerUnreachable
from reconciler.api.models import ActionAnswer
from reconciler.commands.remote import (
    SERVER_HELP,
    api_client,
    api_options,
    app_ref,
    failure,
    store_option,
)

if TYPE_CHECKING:
    from reconciler.api.app import Gateway

EXIT_CODES = """\b
Exit codes: 0 accepted, 1 refused (401 token not accepted, 403 not allowed, 404 no such
app, 409 not possible for this app now, 429 rate-limited, 501), 2 usage (a bad argument,
a kubeconfig that cannot be used), 3 the server or a cluster is unreachable, or the
server cannot reach the clusters (5xx)."""

DIRECT_WAIT = """\b
Straight to the clusters (no --server), this process does what the server would, then
waits for it to finish (a restart: until its last zone rolled out) before exiting,
with the kubeconfig's own credentials: `patch` on the Deployments and DaemonSets
(restart), on the app's resource on the host (rollout pause|resume), `delete` and
`create` on the Jobs (rerun). pincompile's events of it go to --store when given."""

OUTPUT = output_option("text", "json", "yaml")
WAIT_SECONDS = 3600.0
"""Straight to the clusters, how long the command waits for what it started."""


def act(app: AppRef, action: str, fmt: str, api: dict[str, Any]) -> None:
    """Ask the server for ``action`` on ``app``; print its answer; exit as documented."""
    with api_client(**api) as (client, gateway):
        answer = _asked(client, app, action)
        _print(answer, fmt)
        if gateway is not None:
            _wait(gateway, app, action)
    sys.exit(EXIT_OK)


def _wait(gateway: Gateway, app: AppRef, action: str) -> None:
    """Straight to the clusters: wait for what this process started (exit 3 if cut)."""
    from reconciler.commands.direct import wait_idle

    try:
        done = wait_idle(gateway, app, WAIT_SECONDS)
    except KeyboardInterrupt:
        done = False
    if not done:
        fail(f"{app}: stopped waiting: the {action} stops here, what it did not reach yet "
             "stays as it is", EXIT_CLUSTER)


def _asked(client: ApiClient, app: AppRef, action: str) -> ActionAnswer:
    """The answer to ``action``, or one line and the documented exit code."""
    try:
        return client.act(*app, action)
    except ServerUnreachable as exc:
        why, code = failure(str(app), exc, client)
    except ApiError as exc:
        if exc.status in (400, 422) or (exc.status >= 500 and exc.status != 501):
            why, code = failure(str(app), exc, client)
        else:
            why, code = f"{app}: refused ({exc.status}): {exc}", EXIT_INVALID
    fail(why, code)
    sys.exit(code)  # fail exits; for the type checker


def _print(answer: ActionAnswer, fmt: str) -> None:
    if fmt != "text":
        doc = answer.model_dump(mode="json")
        click.echo(json.dumps(doc, indent=2) if fmt == "json"
                   else yaml.safe_dump(doc, sort_keys=False).rstrip())
    else:
        click.echo(f"{answer.app}: {answer.message}")
        for step, zone in enumerate(answer.zones, 1):
            click.echo(f"  {step}. zone {zone.zone}: {', '.join(zone.objects)}")
        for obj in answer.objects:
            click.echo(f"  {obj}")


@click.command("restart")
@click.argument("app", metavar="KIND/PROJECT/NAME", callback=app_ref)
@OUTPUT
@api_options
@store_option
def restart(app: AppRef, fmt: str, **api: Any) -> None:
    """Restart an app's pods in every cluster, zone by zone (like `kubectl rollout
    restart`): each zone's Deployments and DaemonSets get a new
    restartedAt pod-template annotation, and the next zone starts once they have rolled
    out within the app's health timeout. The server runs it after answering; `pincompile
    events` shows its progress. Your token needs `update` on the app's `restart`
    subresource (docs/api/README.md).

    \b
    Example:
      pincompile restart PinApp/search/search-api
    """
    act(app, "restart", fmt, api)


@click.group("rollout")
def rollout() -> None:
    """Pause or resume an app's zone-by-zone rollout (`update` on its `rollout`
    subresource)."""


@rollout.command("pause")
@click.argument("app", metavar="KIND/PROJECT/NAME", callback=app_ref)
@OUTPUT
@api_options
@store_option
def pause(app: AppRef, fmt: str, **api: Any) -> None:
    """Pause an app's zone-by-zone rollout: the zone being rolled out finishes and the
    next zone waits until `rollout resume` (the app's status says who paused it).

    \b
    Example:
      pincompile rollout pause PinApp/search/search-api
    """
    act(app, "rollout/pause", fmt, api)


@rollout.command("resume")
@click.argument("app", metavar="KIND/PROJECT/NAME", callback=app_ref)
@OUTPUT
@api_options
@store_option
def resume(app: AppRef, fmt: str, **api: Any) -> None:
    """Resume a paused rollout: the next zone starts at the reconciler's next pass.

    \b
    Example:
      pincompile rollout resume PinApp/search/search-api
    """
    act(app, "rollout/resume", fmt, api)


@click.command("rerun")
@click.argument("app", metavar="KIND/PROJECT/NAME", callback=app_ref)
@OUTPUT
@api_options
@store_option
def rerun(app: AppRef, fmt: str, **api: Any) -> None:
    """Run a PinterestJobSet's Jobs or a PinterestTrainingJob's training job again: the
    server deletes them in every cluster and creates them again from the same spec
    (`update` on the app's `rerun` subresource). Other kinds are refused (exit 1).

    \b
    Example:
      pincompile rerun PinterestJobSet/search/search-indexer
    """
    act(app, "rerun", fmt, api)


for _command in (restart, pause, resume, rerun):
    _command.help = (f"{inspect.cleandoc(_command.help or '')}\n\n{SERVER_HELP}\n\n"
                     f"{DIRECT_WAIT}\n\n{EXIT_CODES}")
