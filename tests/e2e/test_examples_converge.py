"""The examples, reconciled on the session fleet: a pass right after a converged pass writes
nothing — for every kind the examples compile to, autoscaled apps (PinScalers) included —
and finds nothing to dry-run that it can prove unchanged."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from pincompile.compiler import compile_path
from reconciler.engine import Reconciler
from reconciler.fleet import fleet as fleet_mod
from reconciler.model import PassReport

pytestmark = pytest.mark.e2e
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _pass(fleet: fleet_mod.FleetState, root: Path, *, wait: bool
          ) -> tuple[Reconciler, PassReport]:
    reconciler = Reconciler(str(fleet.kubeconfig), wait=wait, timeout=120)
    report = reconciler.run(compile_path(root))
    reconciler.close()
    return reconciler, report


def test_a_pass_after_a_converged_pass_writes_nothing_for_any_kind(
        fleet: fleet_mod.FleetState, tmp_path: Path) -> None:
    root = tmp_path / "examples"
    shutil.copytree(EXAMPLES, root)
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
