"""``pincompile rotate CLUSTER``: replace every node of a member cluster, batch by batch,
through the PinCompute API (``--server``) or straight to the host; ``--status``,
``--suspend`` and ``--resume`` follow, pause and resume it."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import click
import yaml

from pincompile.commands.common import (
    EXIT_CLUSTER,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_USAGE,
    columns,
    fail,
    output_option,
)
from reconciler.api.client import ApiClient, ApiError, ServerUnreachable
from reconciler.api.rotation_models import RotationAnswer
from reconciler.commands.remote import SERVER_HELP, api_client, api_options
from reconciler.commands.tables import age

POLL_SECONDS = 2.0
EXIT_CODES = """\b
Exit codes: 0 accepted (--wait: the rotation completed), 1 refused (401, 403, 404 no such
cluster, 409 a rotation is in progress or none is, 429), 2 usage, 3 the server or the host
is unreachable (or --wait was cut short)."""


@click.command("rotate", epilog=f"{SERVER_HELP}\n\n{EXIT_CODES}")
@click.argument("cluster")
@click.option("--pool", help="Only this pool's nodes (the node label pincompute.io/node-pool).")
@click.option("--batch", type=click.IntRange(1, 100),
              help="Nodes replaced at once (default: the Cluster's rotation.batch).")
@click.option("--pause", metavar="DURATION",
              help="Wait between batches, e.g. 2m (default: the Cluster's rotation.pause).")
@click.option("--status", "show", is_flag=True, help="Show the rotation's progress.")
@click.option("--suspend", is_flag=True,
              help="Pause the rotation: the batch under way finishes, no new one starts.")
@click.option("--resume", is_flag=True, help="Resume a paused rotation.")
@click.option("--wait", is_flag=True,
              help="Then follow the rotation until it completes, a line per change.")
@output_option("text", "json", "yaml")
@api_options
def rotate(cluster: str, pool: str | None, batch: int | None, pause: str | None, show: bool,
           suspend: bool, resume: bool, wait: bool, fmt: str, **api: Any) -> None:
    """Replace every node of CLUSTER: cordon a batch, evict its pods through the Eviction
    API (PodDisruptionBudgets and grace periods honoured), wait until every moved app is
    Ready again, remove the old nodes, wait for their replacements, pause, go on — in the
    order of the Cluster's rotation policy. `pincompile serve` (the leader of the
    cluster's shard) runs it and keeps its progress on the host, so it survives a restart.
    Your token needs `update` on `clusters/rotation` (pincompute.io) on the host.

    \b
    Examples:
      pincompile rotate use1a-general-01 --pool general --batch 1 --pause 2m
      pincompile rotate use1a-general-01 --status
      pincompile rotate use1a-general-01 --suspend      # or --resume
    """
    if sum((show, suspend, resume)) > 1:
        fail("give at most one of --status, --suspend, --resume", EXIT_USAGE)
    if (show or suspend or resume) and (pool or batch or pause):
        fail("--pool, --batch and --pause start a rotation: not with --status, --suspend "
             "or --resume", EXIT_USAGE)
    action = "pause" if suspend else "resume" if resume else "" if show else "start"
    params = {"pool": pool, "batch": batch, "pause": pause} if action == "start" else {}
    with api_client(**api) as (client, _gateway):
        answer = _call(client, cluster, action, params)
        _print(answer, fmt)
        if wait:
            _follow(client, cluster, answer)
    sys.exit(EXIT_OK)


def _call(client: ApiClient, cluster: str, action: str, params: dict[str, Any]
          ) -> RotationAnswer:
    try:
        return client.rotation(cluster, action, **params)
    except ServerUnreachable as exc:
        why, code = f"server unreachable: {exc}", EXIT_CLUSTER
    except ApiError as exc:
        if exc.status in (400, 422):
            why, code = f"{cluster}: {exc}", EXIT_USAGE
        elif exc.status >= 500:
            why, code = f"{cluster}: the server answered {exc.status}: {exc}", EXIT_CLUSTER
        else:
            why, code = f"{cluster}: refused ({exc.status}): {exc}", EXIT_INVALID
    fail(why, code)
    sys.exit(code)  # fail exits; for the type checker


def _follow(client: ApiClient, cluster: str, answer: RotationAnswer) -> None:
    """Print the rotation's message whenever it changes, until it completes."""
    wanted = (answer.request or {}).get("id")
    said = ""
    try:
        while True:
            now = _call(client, cluster, "", {})
            status = now.status or {}
            if status.get("id") == wanted:
                line = f"{status.get('phase')}: {status.get('message')}"
                if line != said:
                    click.echo(f"{time.strftime('%H:%M:%S')} {line}")
                    said = line
                if status.get("phase") == "Complete":
                    return
            time.sleep(POLL_SECONDS)
    except KeyboardInterrupt:
        fail(f"{cluster}: stopped following; the rotation goes on (`--status`)", EXIT_CLUSTER)


def _print(answer: RotationAnswer, fmt: str) -> None:
    if fmt != "text":
        doc = answer.model_dump(mode="json")
        click.echo(json.dumps(doc, indent=2) if fmt == "json"
                   else yaml.safe_dump(doc, sort_keys=False).rstrip())
        return
    if answer.message:
        click.echo(answer.message)
    status = answer.status
    if not status:
        click.echo(f"{answer.cluster}: no rotation has run"
                   + (f"; {answer.request['id']} is requested" if answer.request else ""))
        return
    paused = f" (paused by {answer.pausedBy})" if answer.pausedBy else ""
    click.echo(f"{answer.cluster}: rotation {status.get('id')} by "
               f"{status.get('requestedBy') or '?'}: {status.get('phase')}{paused}: "
               f"{status.get('message')}")
    rows: list[list[object]] = [["NODE", "POOL", "STATE", "REPLACEMENT", "VERSION", "SINCE"]]
    for node in status.get("nodes") or []:
        rows.append([node.get("name"), node.get("pool") or "-", node.get("state"),
                     node.get("replacement") or "-", node.get("version") or "-",
                     age(node.get("since"))])
    for line in columns(rows):
        click.echo(line)
