"""``pincompile slo`` (each SLO's value, budget left and burn rates; Prometheus rules for
them) and ``pincompile verify`` (the canary's probes once, as a release gate)."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from pincompile.commands.common import (
    EXIT_CLUSTER,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_USAGE,
    columns,
    fail,
    output_option,
    table_width,
)
from reconciler.api.client import ApiClient
from reconciler.commands.options import DURATION
from reconciler.commands.remote import api_errors

CONFIG = "pincompile.yaml"


def _objectives(root: Path) -> Any:
    """The SLOs declared in ROOT's pincompile.yaml (the defaults without one); exit 1 with
    located errors when it is invalid."""
    from pincompile.commands.common import report
    from pincompile.repoconfig import repo_config, verification

    file = root / CONFIG if root.is_dir() else root
    if not file.exists():
        return verification({}).objectives
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"cannot read {file}: {exc}", EXIT_USAGE)
    _, problems = repo_config({CONFIG: text})
    if problems:
        from dataclasses import replace

        report([replace(p, file=str(file)) for p in problems], {str(file): text}, "human")
        sys.exit(EXIT_INVALID)
    return verification({CONFIG: text}).objectives


def _client(server: str, token: str | None, timeout: float, ca_file: str | None,
            insecure: bool) -> ApiClient:
    if not server.startswith(("http://", "https://")):
        fail(f"--server {server[:100]!r}: give a URL, http://HOST:PORT or https://HOST:PORT",
             EXIT_USAGE)
    return ApiClient(server, token, timeout=timeout, ca_file=ca_file, insecure=insecure)


def server_options(default_timeout: str) -> Any:
    def add(command: Any) -> Any:
        for option in reversed([
            click.option("--server", envvar="PINCOMPILE_SERVER", metavar="URL",
                         help="The PinCompute API (default: $PINCOMPILE_SERVER)."),
            click.option("--token", envvar="PINCOMPILE_TOKEN", metavar="TOKEN",
                         show_envvar=False,
                         help="Bearer token (default: $PINCOMPILE_TOKEN; never printed)."),
            click.option("--timeout", type=DURATION, default=default_timeout,
                         show_default=True, help="How long to wait for the answer."),
            click.option("--ca-file", type=click.Path(dir_okay=False, exists=True),
                         help="CA bundle that signed the server's certificate (https)."),
            click.option("--insecure-skip-tls-verify", "insecure", is_flag=True,
                         help="Do not check the server's certificate (testing only)."),
        ]):
            command = option(command)
        return command
    return add


def _percent(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}%"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def slo_table(documents: list[dict[str, Any]], fmt: str) -> str:
    """The SLOs as a table (``wide``: a line per cluster or route group too)."""
    rows: list[list[Any]] = [["SLO", "OBJECTIVE", "WINDOW", "VALUE", "BUDGET LEFT", "BURN 1H",
                              "BURN 6H", "BURN 3D", "EVENTS", "MET"]]
    for d in documents:
        threshold = f" <= {d['threshold']}" if d.get("threshold") else ""
        burn = d["burnRates"]
        rows.append([d["name"], f"{d['objective']:g}%{threshold}", d["window"],
                     _percent(d["value"]),
                     _percent(None if d["budgetLeft"] is None else 100 * d["budgetLeft"], 1),
                     _rate(burn.get("1h")), _rate(burn.get("6h")), _rate(burn.get("3d")),
                     d["events"], {True: "yes", False: "NO", None: "no data"}[d["met"]]])
        if fmt == "wide":
            rows += [[f"  {d['by']}={p['key']}", "", "", _percent(p["value"]), "",
                      _rate(p["burn1h"]), "", "", p["events"], ""] for p in d["parts"]]
    return "\n".join(columns(rows, width=table_width(fmt), truncate=("SLO",),
                             drop=("EVENTS", "BURN 3D", "WINDOW")))


@click.command("slo")
@click.argument("root", required=False, default=".", type=click.Path(exists=False,
                path_type=Path))
@click.option("--prometheus-rules", "rules", is_flag=True,
              help="Print Prometheus recording and multi-window burn-rate alerting rules "
                   "for the SLOs of ROOT's pincompile.yaml (no server needed).")
@click.option("--store", metavar="URL",
              help="Without --server: the insight store `pincompile serve --store` writes "
                   "(sqlite:///PATH or postgresql://...); the SLOs are ROOT's.")
@click.option("--exit-code", is_flag=True, help="Exit 1 when an SLO is not met.")
@output_option("table", "wide", "json", "yaml")
@server_options("30s")
def slo(root: Path, rules: bool, store: str | None, exit_code: bool, fmt: str,
        server: str | None, **client: Any) -> None:
    """Each SLO's value over its window, the error budget left and how fast it burns
    (over 1 h, 6 h and 3 d: 1 spends the budget exactly in the window), from the SLIs
    `pincompile serve` measures; or (--prometheus-rules) Prometheus rules for them.

    The SLOs are declared in pincompile.yaml (`slos:`; docs/slo.md); without them the
    defaults: API availability 99.9% over 30 days, reserved-tier launches within 25 s
    (P99), reconcile passes per cluster within 30 s (P99).

    \b
    Examples:
      pincompile slo --server http://pincompute.internal:8080
      pincompile slo -o wide --store sqlite:///$HOME/.cache/pincompile/insight.db
      pincompile slo --prometheus-rules > slos.rules.yaml && promtool check rules slos.rules.yaml

    \b
    Exit codes: 0 ok, 1 an invalid pincompile.yaml (or with --exit-code, an SLO not
    met), 2 usage, 3 the server or the store cannot be read (401, 403, 5xx).
    """
    if rules:
        from reconciler.slo.rules import rules_yaml

        click.echo(rules_yaml(_objectives(root)), nl=False)
        sys.exit(EXIT_OK)
    documents = _remote(server, client) if server else _stored(root, store)
    if fmt == "json":
        click.echo(json.dumps(documents, indent=2))
    elif fmt == "yaml":
        from pincompile.emit.output import to_yaml

        click.echo(to_yaml(documents).rstrip())
    else:
        click.echo(slo_table(documents, fmt))
    sys.exit(EXIT_INVALID if exit_code and any(d["met"] is False for d in documents)
             else EXIT_OK)


def _remote(server: str, client: dict[str, Any]) -> list[dict[str, Any]]:
    with api_errors("slos"):
        answer = _client(server, **client).call_json("/slos")
    return list(answer["slos"])


def _stored(root: Path, url: str | None) -> list[dict[str, Any]]:
    if url is None:
        fail("the SLIs are kept by `pincompile serve`: pass --server URL (or set "
             "PINCOMPILE_SERVER), or --store URL to read its store", EXIT_USAGE)
        return []
    from reconciler.slo.serving import evaluate_all
    from reconciler.store import Store, StoreError

    objectives = _objectives(root)
    try:
        opened = Store.open(url)
    except StoreError as exc:
        fail(f"--store: {exc}", EXIT_CLUSTER)
    try:
        return [s.document() for s in evaluate_all(opened, objectives, datetime.now(UTC))]
    finally:
        opened.close()


@click.command("verify")
@click.option("--cluster", "clusters", multiple=True, metavar="NAME",
              help="Probe only this member cluster (repeat for more; default: every "
                   "cluster the canary policy names).")
@output_option("table", "json")
@server_options("10m")
def verify(clusters: tuple[str, ...], fmt: str, server: str | None, **client: Any) -> None:
    """Run the canary's probes once, now, through `pincompile serve` (its policy in the
    served revision's pincompile.yaml), and exit 1 when any fails: a release gate for a
    pipeline that promotes a platform change stage by stage.

    Each probe launches a small workload of the canary's platform project in one member
    cluster and tier (its quota, placement and tiers), times it until every replica is
    Ready, reads its logs, runs a command in it and deletes it. The caller needs `post`
    on the non-resource URL /api/v1/verify in the host cluster
    (contrib/api/rbac-platform.yaml).

    \b
    Example:
      pincompile verify --server http://pincompute.internal:8080 --cluster use1a-general-01

    \b
    Exit codes: 0 every probe passed, 1 a probe failed (each failure named on stderr),
    2 usage, 3 the server is unreachable or refused (401, 403, 422 an unknown cluster,
    429, 503 no canary policy).
    """
    if server is None:
        fail("verify runs the probes in `pincompile serve`: pass --server URL (or set "
             "PINCOMPILE_SERVER)", EXIT_USAGE)
        return
    with api_errors("verify"):
        answer = _client(server, **client).call_json(
            "/verify", [("cluster", c) for c in clusters], method="POST")
    probes = answer["probes"]
    if fmt == "json":
        click.echo(json.dumps(answer, indent=2))
    else:
        rows = [["CLUSTER", "TIER", "RESULT", "LAUNCH", "LOGS", "EXEC", "SECONDS", "MESSAGE"]]
        rows += [[p["cluster"], p["tier"], p["stage"], _seconds(p["launch_seconds"]),
                  _check(p["logs_ok"]), _check(p["exec_ok"]), f"{p['seconds']:.1f}",
                  p["message"] or "-"] for p in probes]
        click.echo("\n".join(columns(rows, width=table_width(fmt))) if probes
                   else "no probes: the canary policy names no cluster")
    for p in probes:
        if not p["ok"]:
            click.echo(f"verify: {p['cluster']}/{p['tier']} failed at {p['stage']}: "
                       f"{p['message']}", err=True)
    sys.exit(EXIT_OK if answer["ok"] else EXIT_INVALID)


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}s"


def _check(value: bool | None) -> str:
    return {True: "ok", False: "failed", None: "-"}[value]
