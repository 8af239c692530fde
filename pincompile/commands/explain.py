"""``pincompile explain KIND/PROJECT/NAME``: where a workload runs, why, and what it makes."""

from __future__ import annotations

import difflib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from pincompile.appref import AppRefError, parse_app_ref
from pincompile.catalog import Entry
from pincompile.commands.common import (
    EXIT_INVALID,
    EXIT_OK,
    EXIT_USAGE,
    columns,
    complete_app_ref,
    output_option,
    report,
    table_width,
)
from pincompile.compiler import compile_path
from pincompile.emit.output import to_yaml
from pincompile.manifest import Manifest
from pincompile.models import WORKLOAD_KINDS, PinScaler
from pincompile.models.types import format_quantity
from pincompile.pipeline import Result
from pincompile.placement import Decision, Plan
from pincompile.placement.scores import HEADROOM, STABILITY, TOTAL, ZONE_SPREAD

Key = tuple[str, str, str]


@click.command()
@click.argument("ref", metavar="KIND/PROJECT/NAME", shell_complete=complete_app_ref)
@click.option("--root", type=click.Path(exists=True, path_type=Path), default=Path("."),
              show_default=True, help="The spec tree to compile.")
@output_option("table", "wide", "yaml", "json")
def explain(ref: str, root: Path, fmt: str) -> None:
    """Show where a workload is placed and why, and the objects it produces.

    \b
    Prints the eligible clusters with their scores, the clusters that were filtered out
    and the filter that removed each, the replicas per cluster and zone (with the HPA
    bounds when a PinScaler targets the app) and every generated object.
    \b
    Examples:
      pincompile explain PinApp/search/search-api --root examples
      pincompile explain PinScaler/search/search-api -o yaml
    \b
    Exit codes: 0 ok, 1 the specs have errors (printed after the explanation) or no such
    workload (with the closest one), 2 usage error (a malformed KIND/PROJECT/NAME, a kind
    that is not a workload).
    """
    key = _parse_ref(ref)
    result = compile_path(root)
    plan: Plan | None = result.plan if isinstance(result.plan, Plan) else None
    target, scaler = _resolve(key, result, plan)
    decision = plan.decision(target) if plan is not None and target is not None else None
    if decision is None or target is None:
        _not_found(ref, key, result)
        return
    sources = {target} | ({scaler.resource.key} if scaler is not None else set())
    objects = sorted((m for m in result.manifests
                      if m.source is not None and m.source.resource.key in sources),
                     key=lambda m: m.relpath)
    entry = _entry(result, target)
    if fmt in ("table", "wide"):
        click.echo(render_table(decision, objects, entry, scaler, table_width(fmt)))
    else:
        data = {"decision": decision.to_json(), "objects": [_object(m) for m in objects]}
        if scaler is not None:
            data["scaler"] = "/".join(scaler.resource.key)
        click.echo(to_yaml(data).rstrip("\n") if fmt == "yaml" else json.dumps(data, indent=2))
    if result.diagnostics:
        report(result.diagnostics, result.sources, "human")
        sys.exit(EXIT_INVALID)
    sys.exit(EXIT_OK)


# --- finding the workload -------------------------------------------------------------------

def _parse_ref(ref: str) -> Key:
    try:
        return parse_app_ref(ref)
    except AppRefError as exc:
        raise click.UsageError(str(exc)) from None


def _resolve(key: Key, result: Result, plan: Plan | None
             ) -> tuple[Key | None, Entry[PinScaler] | None]:
    """The workload key to explain, and the PinScaler involved (if any)."""
    if plan is None:
        return None, None
    if key[0] == PinScaler.KIND:
        target = plan.scaler_targets.get(key)
        scaler = next((e for e in result.catalog.scalers if e.resource.key == key), None)
        return target, scaler
    scaler_key = next((s for s, t in plan.scaler_targets.items() if t == key), None)
    scaler = next((e for e in result.catalog.scalers if e.resource.key == scaler_key), None)
    return key, scaler


def _entry(result: Result, key: Key) -> Entry[Any] | None:
    return next((e for e in result.catalog.entries if e.resource.key == key), None)


def _not_found(ref: str, key: Key, result: Result) -> None:
    known = sorted("/".join(e.resource.key) for e in result.catalog.entries
                   if e.resource.kind in (*WORKLOAD_KINDS, PinScaler.KIND))
    wanted = "/".join(key)
    if result.diagnostics:
        report(result.diagnostics, result.sources, "human")
        click.echo(f"error: '{ref}' is not among the valid specs (see the errors above)",
                   err=True)
        sys.exit(EXIT_INVALID)
    if key[0] not in (*WORKLOAD_KINDS, PinScaler.KIND):
        message = f"explain works on workloads and PinScalers, not {key[0]}"
    elif key in {e.resource.key for e in result.catalog.scalers}:
        message = f"PinScaler '{ref}' targets no PinApp or PinterestService"
    else:
        same_kind = [k for k in known if k.startswith(key[0] + "/")]
        close = (difflib.get_close_matches(wanted, same_kind, 1, 0.6)
                 or difflib.get_close_matches(wanted, known, 1, 0.6))
        message = f"no {key[0]} '{key[2]}' in project '{key[1]}'"
        if close:
            message += f"; did you mean '{close[0]}'?"
        elif known:
            message += f" ({len(known)} workloads are defined; e.g. '{known[0]}')"
        click.echo(f"error: {message}", err=True)
        sys.exit(EXIT_INVALID)  # not found
    click.echo(f"error: {message}", err=True)
    sys.exit(EXIT_USAGE)


# --- rendering ------------------------------------------------------------------------------

def _object(m: Manifest) -> dict[str, Any]:
    return {"cluster": m.cluster, "kind": m.kind, "namespace": m.namespace, "name": m.name,
            "path": m.relpath}


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]],
           width: int | None) -> list[str]:
    return columns([headers, *rows], indent="  ", width=width)


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 1000:
        return f"{value:,.0f}"
    return f"{value:.4g}"


def render_table(decision: Decision, objects: Sequence[Manifest], entry: Entry[Any] | None,
                 scaler: Entry[PinScaler] | None, width: int | None = None) -> str:
    """The human-readable explanation of one decision, its tables fit to ``width``."""
    out = _heading(decision, entry, scaler)
    out += _placed(decision, entry, width)
    out += _eligible(decision, width)
    if decision.filtered:
        out.append("Filtered out:")
        rows: list[list[object]] = []
        for c, reason in sorted(decision.filtered.items()):
            name, _, why = reason.partition(": ")
            rows.append([c, name, why])
        out += _table(["CLUSTER", "FILTER", "REASON"], rows, width)
        out.append("")
    if decision.notes:
        out.append("Notes:")
        out += [f"  - {n}" for n in decision.notes]
        out.append("")
    out.append(f"Objects ({len(objects)}):")
    if objects:
        out += _table(["CLUSTER", "KIND", "NAMESPACE", "NAME"],
                      [[m.cluster, m.kind, m.namespace or "-", m.name] for m in objects],
                      width)
    else:
        out.append("  (none generated)")
    return "\n".join(out)


def _heading(decision: Decision, entry: Entry[Any] | None,
             scaler: Entry[PinScaler] | None) -> list[str]:
    """The workload, where it is defined, its pod's requests and its scaler."""
    out: list[str] = []
    where = ""
    if entry is not None:
        loc = entry.at("metadata", "name")
        where = f"  ({loc.file}:{loc.line})"
    out.append(f"{decision.kind} {decision.project}/{decision.name}{where}")
    requests = ", ".join(f"{k} {format_quantity(v, k)}" for k, v in decision.pod_requests.items())
    out.append(f"  tier {decision.tier}; one pod requests {requests or 'nothing'} "
               "(injected containers included)")
    if scaler is not None:
        spec = scaler.resource.spec
        out.append(f"  scaled by PinScaler {scaler.resource.name}: minReplicas "
                   f"{spec.min_replicas}, maxReplicas {spec.max_replicas}")
    out.append("")
    return out


def _placed(decision: Decision, entry: Entry[Any] | None, width: int | None) -> list[str]:
    """The clusters the workload is placed in, with its replicas (or that it is not)."""
    if not decision.shards:
        return ["Not placed: no cluster accepts it.", ""]
    out: list[str] = []
    hpa = any(s.max_replicas is not None for s in decision.shards)
    jobset = any(s.parallelism is not None for s in decision.shards)
    headers = ["CLUSTER", "REGION", "ZONE", "REPLICAS"]
    pods: int | None = None
    if decision.kind == "PinterestJobSet":
        headers[3] = "COMPLETIONS"
    elif decision.kind == "PinterestTrainingJob" and entry is not None:
        headers[3] = "PODS"  # every replica of every role lands in this one cluster
        pods = sum(entry.resource.spec.replicas.values())
    if hpa:
        headers += ["HPA MIN", "HPA MAX"]
    if jobset:
        headers += ["INDEXES", "PARALLELISM"]
    rows = []
    for s in decision.shards:
        count: object = s.replicas if pods is None else pods
        row: list[object] = [s.cluster, s.region, s.zone,
                             "-" if decision.kind == "PinterestDaemon" else count]
        if hpa:
            row += [s.min_replicas, s.max_replicas]
        if jobset:
            row += [f"{s.index_offset}-{s.index_offset + s.replicas - 1}", s.parallelism]
        rows.append(row)
    out.append(f"Placed in {len(decision.shards)} cluster"
               f"{'s' if len(decision.shards) != 1 else ''}:")
    out += _table(headers, rows, width)
    if decision.kind in ("PinApp", "PinterestService"):
        zones = ", ".join(f"{z}={n}" for z, n in decision.replicas_by_zone().items())
        out.append(f"  replicas per zone: {zones}")
    out.append("")
    return out


def _eligible(decision: Decision, width: int | None) -> list[str]:
    """The eligible clusters in the order they are preferred, with their scores."""
    if not decision.order:
        return []
    out = ["Eligible clusters, in the order they are preferred:"]
    chosen = set(decision.clusters)
    with_zone = any(ZONE_SPREAD in decision.scores[c] for c in decision.order)
    headers = ["#", "CLUSTER", "HEADROOM (pods)", "STABILITY"]
    if with_zone:
        headers.append("ZONE-SPREAD")
    headers += ["TOTAL", "USED"]
    rows = []
    for i, c in enumerate(decision.order, 1):
        sc = decision.scores[c]
        row = [i, c, _number(sc.get(HEADROOM)), _number(sc.get(STABILITY))]
        if with_zone:
            row.append(_number(sc.get(ZONE_SPREAD)))
        row += [_number(sc.get(TOTAL)), "yes" if c in chosen else "no"]
        rows.append(row)
    out += _table(headers, rows, width)
    out.append("  total = headroom / -ln(stability/100): weighted rendezvous hashing, "
               "stable per workload")
    out.append("")
    return out
