"""``pincompile describe KIND/PROJECT/NAME``: one view of an app, as ``kubectl describe``
and ``argocd app get`` give one: its spec in short, where it is placed and why, its
objects in every member cluster with their health, its pods (every container), its
conditions, the rollout gate, and its last events and revisions."""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import click

from pincompile.appref import AppRef
from pincompile.commands.common import EXIT_OK, output_option, table_width
from pincompile.emit.output import to_yaml
from reconciler.api.client import ApiClient
from reconciler.api.models import AppDetail, AppEvent, AppRevision, ObjectList, PodList
from reconciler.commands.remote import (
    EXIT_CODES,
    SERVER_HELP,
    api_client,
    api_errors,
    api_options,
    app_ref,
    one_app,
    short_revision,
    store_option,
)
from reconciler.commands.tables import age, columns, failover_cell, pods_text

EVENTS_SHOWN, REVISIONS_SHOWN = 10, 5


@click.command("describe")
@click.argument("app", metavar="KIND/PROJECT/NAME", callback=app_ref)
@output_option("text", "json", "yaml")
@api_options
@store_option
def describe(app: AppRef, fmt: str, **api: Any) -> None:
    """Everything about one app in one view: its spec in short and where it comes from;
    where it is placed (cluster, zone, replicas) and why every other cluster was left
    out; its objects in every member cluster with their health; its pods, every
    container (sidecars and init containers too); its conditions; the rollout gate (the
    zone being rolled out and what the next one waits for); failover; its last 10 events
    and 5 revisions. -o json|yaml: the same as one document.

    \b
    Examples:
      pincompile describe PinApp/search/search-api
      pincompile describe PinterestJobSet/search/search-indexer -o yaml
    """
    with api_client(**api) as (client, _), api_errors(str(app), client):
        found = gather(client, app)
    if fmt in ("json", "yaml"):
        document = {k: (v.model_dump(mode="json") if hasattr(v, "model_dump") else
                        [e.model_dump(mode="json") for e in v]) for k, v in found.items()}
        click.echo(json.dumps(document, indent=2) if fmt == "json" else
                   to_yaml(document).rstrip())
    else:
        click.echo(render(found, table_width("table")))
    sys.exit(EXIT_OK)


def gather(client: ApiClient, app: AppRef) -> dict[str, Any]:
    """The app's document (exit 1 when there is no such app), then its objects, pods,
    events and revisions, asked at once."""
    detail = one_app(client, app)
    reads: dict[str, Callable[[], Any]] = {
        "objects": lambda: client.objects(*app), "pods": lambda: client.pods(*app),
        "events": lambda: client.events(*app, limit=EVENTS_SHOWN),
        "revisions": lambda: client.history(*app, limit=REVISIONS_SHOWN)}
    with ThreadPoolExecutor(max_workers=len(reads)) as pool:
        futures = {name: pool.submit(read) for name, read in reads.items()}
        return {"app": detail, **{name: f.result() for name, f in futures.items()}}


def render(found: Mapping[str, Any], width: int | None) -> str:
    """The sections of the text view, each under its title."""
    detail: AppDetail = found["app"]
    objects: ObjectList = found["objects"]
    pods: PodList = found["pods"]
    sections = [
        ("", header(detail)),
        ("Spec", spec_lines(detail)),
        ("Placement", placement_table(detail, width)),
        ("Rollout", rollout_lines(detail)),
        ("Failover", failover_lines(detail)),
        ("Conditions", conditions_table(detail, width)),
        ("Objects", objects_table(objects, width)),
        ("Pods", pods_text([(detail, pods)], "table", width) or "none"),
        (f"Events (last {EVENTS_SHOWN})", events_table(found["events"], width)),
        (f"Revisions (last {REVISIONS_SHOWN})", revisions_table(found["revisions"], width)),
    ]
    out = []
    for title, body in sections:
        if not body:
            continue
        out.append(body if not title else f"{title}:\n" + _indent(body))
    return "\n".join(out)


def _indent(text: str) -> str:
    return "\n".join(f"  {line}" if line else line for line in text.splitlines())


def header(detail: AppDetail) -> str:
    rows = [("Name", f"{detail.kind}/{detail.project}/{detail.name}"),
            ("Source", detail.source or "-"),
            ("Phase", f"{detail.phase} ({detail.ready} ready)"),
            ("Message", detail.message or "-"),
            ("Revision", short_revision(detail.observedRevision) or "-"),
            ("Last applied", f"{short_revision(detail.lastAppliedRevision) or '-'} at "
                             f"{detail.lastAppliedTime or '-'}"),
            ("Status written", f"{age(detail.statusTime)} ago" if detail.statusTime else "-")]
    return "\n".join(f"{name + ':':<16}{value}" for name, value in rows)


def spec_lines(detail: AppDetail) -> str:
    """The spec's settings a reader looks for first, one a line."""
    spec = detail.spec or {}
    lines = [f"{key}: {_short(spec[key])}" for key in SPEC_FIELDS if key in spec]
    template = spec.get("template") or {}
    for container in template.get("containers") or []:
        resources = container.get("resources") or {}
        sized = ", ".join(f"{k} {v}" for k, v in resources.items() if isinstance(v, str | int))
        lines.append(f"container {container.get('name')}: {container.get('image')}"
                     + (f" ({sized})" if sized else ""))
    if template.get("sidecars"):
        lines.append(f"sidecars asked for: {', '.join(map(str, template['sidecars']))}")
    for key in ("placement", "rollout", "service"):
        if spec.get(key):
            lines.append(f"{key}: {_short(spec[key])}")
    return "\n".join(lines) or "-"


SPEC_FIELDS = ("replicas", "target", "minReplicas", "maxReplicas", "completions",
               "parallelism", "schedule", "timezone", "framework", "tier", "paused",
               "stopped", "suspend", "failover")


def _short(value: Any) -> str:
    """A spec value in one line: ``{regions: [us-east-1], spread: zone}``."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_short(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_short(v) for v in value) + "]"
    return str(value).lower() if isinstance(value, bool) else str(value)


def placement_table(detail: AppDetail, width: int | None) -> str:
    """Each cluster chosen with its zone, replicas placed and how it runs there; then the
    eligible clusters not chosen and why each other one was left out."""
    placement = detail.placement or {}
    shares = {c.name: c for c in detail.clusters}
    chosen = placement.get("clusters") or [{"name": c.name} for c in detail.clusters]
    table = [["CLUSTER", "ZONE", "PLACED", "READY", "PHASE", "MESSAGE"]]
    for entry in chosen:
        share = shares.get(str(entry.get("name")))
        table.append([entry.get("name"), entry.get("zone", "-"), entry.get("replicas", "-"),
                      f"{share.readyReplicas}/{share.replicas}" if share else "-",
                      share.phase if share else "-", (share.message if share else "") or ""])
    lines = [columns(table, width, truncate=("MESSAGE",), keep=("CLUSTER",))]
    names = {str(c.get("name")) for c in chosen}
    spare = [c for c in placement.get("eligible") or [] if c not in names]
    if spare:
        lines.append(f"eligible, not chosen: {', '.join(spare)}")
    for cluster, why in (placement.get("filtered") or {}).items():
        lines.append(f"left out {cluster}: {why}")
    lines += [f"note: {note}" for note in placement.get("notes") or []]
    return "\n".join(lines)


def rollout_lines(detail: AppDetail) -> str:
    """Where a zone-by-zone rollout is and what its next zone waits for ('' for none)."""
    rollout = detail.rollout or {}
    if not rollout:
        return ""
    zones = [str(z) for z in rollout.get("zones") or []]
    index = int(rollout.get("zoneIndex") or 0)
    marks = [f"{z} {'done' if i < index else 'now' if i == index else 'next'}"
             for i, z in enumerate(zones)]
    timeout = ((detail.spec or {}).get("rollout") or {}).get("healthTimeout")
    lines = [f"{rollout.get('phase', '-')}: " + (" → ".join(marks) or "-")]
    if rollout.get("since"):
        lines.append(f"current zone since {rollout['since']}")
    if rollout.get("phase") == "Progressing" and index < len(zones) - 1:
        lines.append(f"gate: {zones[index + 1]} starts once every Deployment in "
                     f"{zones[index]} has its new pods updated and available"
                     + (f" (within {timeout}, else the rollout halts)" if timeout else ""))
    if rollout.get("pausedBy"):
        lines.append(f"paused by {rollout['pausedBy']}: `pincompile rollout resume` lets "
                     "the next zone start")
    if rollout.get("message"):
        lines.append(f"message: {rollout['message']}")
    return "\n".join(lines)


def failover_lines(detail: AppDetail) -> str:
    move = detail.failover or {}
    if not move:
        return ""
    return f"{failover_cell(move)}: {move.get('message', '')}".rstrip(": ")


def conditions_table(detail: AppDetail, width: int | None) -> str:
    table = [["TYPE", "STATUS", "REASON", "SINCE", "MESSAGE"]]
    table += [[c.get("type", "-"), c.get("status", "-"), c.get("reason", "-"),
               c.get("lastTransitionTime", "-"), c.get("message", "")]
              for c in detail.conditions]
    return columns(table, width, truncate=("MESSAGE",)) if len(table) > 1 else ""


def objects_table(objects: ObjectList, width: int | None) -> str:
    table = [["CLUSTER", "KIND", "NAME", "HEALTH", "AGE", "MESSAGE"]]
    table += [[o.cluster, o.kind, o.name, o.phase, age(o.created), o.message]
              for o in objects.items]
    lines = [columns(table, width, truncate=("MESSAGE",), keep=("NAME",))
             if objects.items else "none"]
    lines += [f"unreadable: {p.cluster}: {p.message}" for p in objects.unreadable]
    return "\n".join(lines)


def events_table(events: list[AppEvent], width: int | None) -> str:
    table = [["AGE", "TYPE", "REASON", "CLUSTER", "OBJECT", "MESSAGE"]]
    table += [[age(e.time.isoformat()), e.type, e.reason, e.cluster or "-", e.object or "-",
               e.message] for e in events]
    return columns(table, width, truncate=("MESSAGE", "OBJECT"), drop=("OBJECT", "CLUSTER")) \
        if events else "none"


def revisions_table(revisions: list[AppRevision], width: int | None) -> str:
    table = [["APPLIED", "REVISION", "RESULT", "AUTHOR"]]
    table += [[r.appliedAt.strftime("%Y-%m-%dT%H:%M:%SZ"), short_revision(r.revision),
               r.result or "-", r.author or "-"] for r in revisions]
    return columns(table, width, keep=("REVISION",)) if revisions else "none"


describe.help = f"{inspect.cleandoc(describe.help or '')}\n\n{SERVER_HELP}\n\n{EXIT_CODES}"
