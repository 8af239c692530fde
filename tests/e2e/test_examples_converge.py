"""The examples, reconciled on the session fleet: a pass right after a converged pass writes
nothing — for every kind the examples compile to, autoscaled apps (PinScalers) included —
and finds nothing to dry-run that it can prove unchanged; and what ``make demo`` promises:
every app ends Healthy or Completed except those the examples pause or stop on purpose
(Suspended), and stays so; and describe, events and history answer for each of them. The
examples' nightly index build runs with fewer shards here
(``tests.e2e.support.examples_copy``): still divided, still in waves."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pincompile.cli import cli
from pincompile.compiler import compile_path
from reconciler.engine import Reconciler
from reconciler.fleet import control, demo
from reconciler.fleet import fleet as fleet_mod
from reconciler.fleet.watch import ReadinessWatch
from reconciler.model import PassReport, Phase
from tests.e2e.support import examples_copy
from tests.support.fake_passes import one_pass

pytestmark = [pytest.mark.e2e, pytest.mark.fleet_alone(
    "reconciles the whole examples tree, pruning what is not its own")]


def _pass(fleet: fleet_mod.FleetState, root: Path, *, wait: bool
          ) -> tuple[Reconciler, PassReport]:
    reconciler = Reconciler(str(fleet.kubeconfig))
    report = one_pass(reconciler, compile_path(root), 120 if wait else None)
    reconciler.close()
    return reconciler, report


def test_a_pass_after_a_converged_pass_writes_nothing_for_any_kind(
        fleet: fleet_mod.FleetState, tmp_path: Path) -> None:
    root = examples_copy(tmp_path / "examples")
    result = compile_path(root)
    kinds = Counter(m.kind for m in result.manifests)
    assert {"Deployment", "HorizontalPodAutoscaler", "Service", "CronJob", "Job", "Pod",
            "DaemonSet", "PodDisruptionBudget", "ResourceQuota"} <= set(kinds), kinds
    _, created = _pass(fleet, root, wait=True)
    assert created.ok, created
    again, report = _pass(fleet, root, wait=False)
    members = {n: c for n, c in report.clusters.items() if n != "host"}
    writes = {n: c.stats.writes for n, c in again.connections.items() if n != "host"}
    changed = [str(r) for c in members.values() for r in [*c.created, *c.updated,
                                                          *c.replaced, *c.pruned]]
    assert sum(writes.values()) == 0 and not changed, (writes, changed)
    assert sum(c.unchanged for c in members.values()) == len(result.manifests)
    # and it knew so without asking: no dry-run for an object it applied itself
    dry_runs = {n: c.stats.by_verb["dry-run"] for n, c in again.connections.items()}
    assert sum(dry_runs.values()) == 0, dry_runs


def _paused_or_stopped(root: Path) -> set[tuple[str, str, str]]:
    """(kind, project, name) of every app whose spec pauses or stops it."""
    found = set()
    for entry in compile_path(root).catalog.entries:
        spec, meta = getattr(entry.resource, "spec", None), entry.resource.metadata
        if getattr(spec, "paused", False) or getattr(spec, "stopped", False):
            found.add((entry.resource.kind, getattr(meta, "project", ""), meta.name))
    return found


def test_every_example_app_ends_healthy_completed_or_suspended_and_stays_so(
        fleet: fleet_mod.FleetState, tmp_path: Path) -> None:
    root = examples_copy(tmp_path / "examples")
    kubeconfig = str(fleet.kubeconfig)
    on_purpose = _paused_or_stopped(root)
    assert on_purpose, "the examples pause or stop no app: nothing to show Suspended"
    # what `make demo` runs after `apply`: passes until every app is settled (bounded)
    rows = demo.wait_until_settled(kubeconfig, root, demo.DEFAULT_TIMEOUT)
    line, ok = demo.summary(rows)
    assert ok and line.endswith("every app is Healthy, Completed or Suspended on purpose"), line
    suspended = {_key(r) for r in rows if r["status"].get("phase") == Phase.SUSPENDED.value}
    assert suspended == on_purpose, line
    assert any(r["status"].get("phase") == Phase.COMPLETED.value for r in rows), line

    # and it stays so past the node controller's grace period: every node and pod of the
    # member clusters watched, a pass (as `serve` runs them) every demo interval. The
    # PinScalers' HPAs scale their apps down towards their floor once the fleet's
    # downscale window has passed (the fleet's default usage is under their targets),
    # and a Deployment being scaled is Progressing until its controller has seen the
    # change: so Progressing may show in one pass, never in two in a row; nothing else.
    window = control.node_monitor_grace_period(fleet, fleet_mod.HOST) + 3 * demo.INTERVAL
    members = [c.name for c in fleet.clusters if c.name != fleet_mod.HOST]
    watch = ReadinessWatch(fleet, clusters=members).start()
    passes: list[list[dict[str, Any]]] = []
    try:
        deadline = time.monotonic() + window
        # the whole window, and 5 passes at least however long a loaded machine takes
        while time.monotonic() < deadline or len(passes) < 5:
            time.sleep(demo.INTERVAL)
            demo.one_pass(kubeconfig, root)
            passes.append(demo.not_ok(demo.read_rows(kubeconfig)))
    finally:
        watch.stop()
    for before, now in zip([[], *passes], passes, strict=False):
        not_progressing = [r for r in now
                           if r["status"].get("phase") != Phase.PROGRESSING.value]
        again = {_key(r) for r in before} & {_key(r) for r in now}
        assert not not_progressing and not again, [demo.describe(p) for p in passes]
    nodes, pods = watch.of("Node"), watch.of("Pod", "not-ready")
    assert not nodes and not pods, "\n".join(map(str, nodes + pods))


def test_describe_events_and_history_answer_for_every_example_app(
        fleet: fleet_mod.FleetState, tmp_path: Path) -> None:
    """What a tenant runs after `make demo`, without serve, for every app of the
    examples: describe, events and history each answer (exit 0) about that app."""
    root = examples_copy(tmp_path / "examples")
    kubeconfig = str(fleet.kubeconfig)
    rows = demo.wait_until_settled(kubeconfig, root, demo.DEFAULT_TIMEOUT)
    assert len(rows) >= 10, rows
    runner, failed = CliRunner(), []
    for row in rows:
        ref = "/".join(_key(row))
        shown = {}
        for command in ("describe", "events", "history"):
            done = runner.invoke(cli, [command, ref, "-o", "json", "--kubeconfig", kubeconfig])
            if done.exit_code != 0:
                failed.append(f"{command} {ref}: exit {done.exit_code}: {done.output[-500:]}")
                continue
            shown[command] = json.loads(done.stdout)
        if len(shown) < 3:
            continue
        if row["name"] not in json.dumps(shown["describe"]):
            failed.append(f"describe {ref} does not name the app")
        if not shown["history"].get("items"):
            failed.append(f"history {ref}: no revision recorded by the passes")
        if not shown["events"].get("items"):
            failed.append(f"events {ref}: nothing within the events' TTL")
    assert not failed, "\n".join(failed)


def _key(row: dict[str, Any]) -> tuple[str, str, str]:
    return row["kind"], row["project"], row["name"]
