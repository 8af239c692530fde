#!/usr/bin/env python3
"""Measure the reconciler on a local fleet: the first apply and a no-op pass.

    python bench/reconcile_bench.py --apps 1000                      # 1,000 apps x 3 clusters
    python bench/reconcile_bench.py --apps 300 --before 0a839da --results

Generates N PinApps (3 replicas each, spread over three zonal clusters: a Deployment, a
Service and a PodDisruptionBudget per app and cluster; every 5th app autoscaled by a cpu
PinScaler, so an HPA too), starts a fleet of its own, then, in one run on one fleet:

1. first pass (everything is created): wall, writes, object writes per minute per cluster;
2. a no-op pass (nothing changed): wall, write requests (must be 0), dry-runs, LISTs per
   (cluster, resource); then a second no-op pass;
3. with ``--before REV``: the same no-op pass made by the reconciler of git revision REV
   (its code, from ``git archive``, in a child process), on the same fleet;
4. baselines, same fleet: every object of every cluster server-side applied again (one
   PATCH each, the clusters in parallel: what ``kubectl apply --server-side`` of the
   compiled tree per cluster sends; no kubectl binary is built with the fleet), and the
   plain creation of one cluster's objects in a second namespace (write throughput).

Prints JSON; ``--results`` also writes bench/RESULTS.md. It is not a test. Takes its fleet
down again.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "bench")]

from results import write_section  # noqa: E402

from pincompile.compiler import compile_path  # noqa: E402
from reconciler.clients import write  # noqa: E402
from reconciler.clients.connect import Connection  # noqa: E402
from reconciler.engine import Reconciler  # noqa: E402
from reconciler.fleet import build  # noqa: E402
from reconciler.fleet import fleet as fleet_mod  # noqa: E402

PLATFORM = REPO / "tests" / "reconciler" / "fixtures" / "repo" / "platform"
APP = """apiVersion: pincompute.io/v1
kind: PinApp
metadata: {{name: app-{i:05d}, project: bench}}
spec:
  replicas: 3
  tier: ondemand
  template:
    containers:
      - name: main
        image: registry.internal/bench/app:{i}.0
        ports: [{{name: http, containerPort: 8080}}]
        resources: {{cpu: 5m, memory: 8Mi}}
  placement: {{regions: [rt-east], spread: zone, maxClusters: 3}}
  rollout: {{strategy: all-at-once}}
  service:
    ports: [{{name: http, port: 80, targetPort: 8080}}]
"""
SCALER = """---
apiVersion: pincompute.io/v1
kind: PinScaler
metadata: {{name: app-{i:05d}, project: bench}}
spec:
  target: app-{i:05d}
  minReplicas: 3
  maxReplicas: 9
  metrics:
    - {{type: cpu, targetUtilization: 60}}
"""
PROJECT = """apiVersion: pincompute.io/v1
kind: Project
metadata: {name: bench}
spec:
  namespace: bench
  owners: [bench]
  quota:
    ondemand: {cpu: "200", memory: 400Gi, pods: "100000"}
"""


def generate(root: Path, apps: int) -> None:
    shutil.copytree(PLATFORM, root / "platform")
    shutil.rmtree(root / "platform" / "projects")
    (root / "platform" / "projects").mkdir()
    (root / "platform" / "projects" / "bench.yaml").write_text(PROJECT)
    (root / "apps" / "bench").mkdir(parents=True)  # the project's folder
    for i in range(apps):
        text = APP.format(i=i) + (SCALER.format(i=i) if i % 5 == 0 else "")
        (root / "apps" / "bench" / f"app-{i:05d}.yaml").write_text(text)


def run_pass(kubeconfig: str, root: Path) -> dict[str, Any]:
    """One pass (no wait for health), its requests counted per cluster."""
    result = compile_path(root, revision="bench")
    assert result.ok, result.diagnostics[:3]
    reconciler = Reconciler(kubeconfig, wait=False)
    started = time.monotonic()
    report = reconciler.run(result)
    seconds = time.monotonic() - started
    stats = {n: c.stats for n, c in reconciler.connections.items()}
    reconciler.close()
    lists = Counter({f"{n}/{r}": k for n, s in stats.items() for r, k in s.lists.items()})
    members = {n: c for n, c in report.clusters.items() if n != "host"}
    return {"seconds": round(seconds, 1), "ok": report.ok, "objects": len(result.manifests),
            "created": {n: len(c.created) for n, c in members.items()},
            "updated": sum(len(c.updated) for c in members.values()),
            "writes": {n: s.writes for n, s in stats.items()},
            "member_writes": sum(s.writes for n, s in stats.items() if n != "host"),
            "dry_runs": {n: s.by_verb["dry-run"] for n, s in stats.items()},
            "gets": sum(s.by_verb["get"] for s in stats.values()),
            "max_lists_per_resource": max(lists.values()) if lists else 0,
            "lists": sum(lists.values())}


def pass_with(revision: str, kubeconfig: str, root: Path) -> dict[str, Any]:
    """:func:`run_pass` made by the reconciler of git ``revision``, in a child process."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp)
        archive = subprocess.run(["git", "archive", revision], cwd=REPO, check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        shutil.copy(__file__, tree / "bench" / "reconcile_bench.py")
        out = subprocess.run(
            [sys.executable, str(tree / "bench" / "reconcile_bench.py"), "--one-pass",
             "--kubeconfig", kubeconfig, "--root", str(root)],
            check=True, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ""})
    data: dict[str, Any] = json.loads(out.stdout)
    return data


def reapply_everything(kubeconfig: str, root: Path, clusters: list[str]) -> dict[str, Any]:
    """Every compiled object server-side applied again (one PATCH each), the clusters in
    parallel, 8 requests at a time per cluster: the baseline for a no-op pass."""
    result = compile_path(root, revision="bench")
    by_cluster = {c: [m.obj for m in result.manifests if m.cluster == c] for c in clusters}
    conns = {c: Connection(c, c, kubeconfig) for c in clusters}

    def one_cluster(cluster: str) -> None:
        conn = conns[cluster]
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(lambda o: write.apply(conn, o, manager="bench-reapply"),
                          by_cluster[cluster]))

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=len(clusters)) as pool:
        list(pool.map(one_cluster, clusters))
    seconds = time.monotonic() - started
    for conn in conns.values():
        conn.close()
    return {"objects": sum(len(v) for v in by_cluster.values()), "seconds": round(seconds, 1)}


def create_baseline(kubeconfig: str, root: Path, cluster: str) -> dict[str, Any]:
    """Plain server-side applies of one cluster's objects, into namespace bench-baseline."""
    result = compile_path(root, revision="bench")
    conn = Connection(cluster, cluster, kubeconfig)
    objs = [m.obj for m in result.manifests if m.cluster == cluster and m.namespace == "bench"]
    write.apply(conn, {"apiVersion": "v1", "kind": "Namespace",
                       "metadata": {"name": "bench-baseline"}})

    def one(obj: dict[str, Any]) -> None:
        obj = json.loads(json.dumps(obj))
        obj["metadata"]["namespace"] = "bench-baseline"
        write.apply(conn, obj)

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(one, objs))
    seconds = time.monotonic() - started
    conn.close()
    return {"objects": len(objs), "seconds": round(seconds, 1),
            "per_minute": round(len(objs) / seconds * 60)}


def measure(apps: int, before: str | None) -> dict[str, Any]:
    build.ensure_binaries(echo=lambda m: print(m, file=sys.stderr))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        generate(root, apps)
        directory = build.cache_root() / "fleet-bench-reconcile"
        state = fleet_mod.up(PLATFORM, directory, echo=lambda m: print(m, file=sys.stderr))
        try:
            kubeconfig = str(state.kubeconfig)
            out: dict[str, Any] = {"apps": apps, "first_pass": run_pass(kubeconfig, root)}
            print(f"first pass: {out['first_pass']}", file=sys.stderr)
            out["noop_pass"] = run_pass(kubeconfig, root)
            out["noop_pass_again"] = run_pass(kubeconfig, root)
            if before:
                out["before"] = {"revision": before,
                                 "noop_pass": pass_with(before, kubeconfig, root)}
            clusters = sorted(out["first_pass"]["created"])
            out["reapply_everything"] = reapply_everything(kubeconfig, root, clusters)
            out["noop_after_reapply"] = run_pass(kubeconfig, root)
            out["create_baseline_rt-a"] = create_baseline(kubeconfig, root, "rt-a")
        finally:
            fleet_mod.down(directory, echo=lambda _m: None)
            shutil.rmtree(directory, ignore_errors=True)
    first = out["first_pass"]
    out["writes_per_minute_per_cluster"] = {
        n: round(k / first["seconds"] * 60) for n, k in first["created"].items()}
    out["loadavg"] = [round(x, 1) for x in os.getloadavg()]
    return out


def results_lines(r: dict[str, Any]) -> list[str]:
    def row(name: str, p: dict[str, Any], note: str = "") -> str:
        dry = sum(v for n, v in p["dry_runs"].items() if n != "host")
        return (f"| {name} | {p['seconds']} | {p['member_writes']} | "
                f"{p['writes'].get('host', 0)} | {dry} | {p['dry_runs'].get('host', 0)} | "
                f"{p['lists']} (max {p['max_lists_per_resource']} per resource) | {note} |")

    first, noop = r["first_pass"], r["noop_pass"]
    lines = [f"{r['apps']} PinApps ({r['apps'] // 5} with a cpu PinScaler) -> "
             f"{first['objects']} objects in 3 member clusters; 2 CPUs shared with other "
             f"work (load average after the run {' '.join(map(str, r['loadavg']))}); "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.", "",
             "| pass | wall s | writes to members | writes to host | dry-runs (members) "
             "| dry-runs (host) | LISTs | note |", "|---|---:|---:|---:|---:|---:|---|---|",
             row("first pass (creates everything)", first,
                 f"{sum(first['created'].values())} created")]
    if "before" in r:
        lines.append(row(f"no-op pass by the reconciler of `{r['before']['revision']}`",
                         r["before"]["noop_pass"],
                         "every object dry-run; it also rewrote every object, to drop the "
                         "record of the newer version (which it does not know)"))
    lines += [
        row("**no-op pass, now**", noop, "target <= 10 s at 1,000 apps, 0 writes"),
        row("no-op pass, now, again", r["noop_pass_again"], ""),
        f"| baseline: every object server-side applied again (one PATCH each, like "
        f"`kubectl apply --server-side` per cluster) | {r['reapply_everything']['seconds']} "
        f"| | | | | | {r['reapply_everything']['objects']} objects |",
        row("no-op pass, now, over objects without a record", r["noop_after_reapply"],
            "every object dry-run (the older reconciler dropped the records): the cost of "
            "a no-op pass before, without its writes" if "before" in r else ""),
        f"| baseline: plain creation of rt-a's objects in a new namespace | "
        f"{r['create_baseline_rt-a']['seconds']} | | | | | | "
        f"{r['create_baseline_rt-a']['per_minute']} objects/min |",
    ]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--apps", type=int, default=1000)
    parser.add_argument("--before", metavar="REV",
                        help="also time the no-op pass of the reconciler at git revision REV")
    parser.add_argument("--results", action="store_true", help="write bench/RESULTS.md")
    parser.add_argument("--one-pass", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one_pass:  # a child of --before: one pass with this tree's reconciler
        print(json.dumps(run_pass(args.kubeconfig, args.root)))
        return 0
    out = measure(args.apps, args.before)
    print(json.dumps(out, indent=2))
    if args.results:
        command = "python bench/reconcile_bench.py --apps " + str(args.apps) + (
            f" --before {args.before}" if args.before else "") + " --results"
        write_section(f"reconcile_bench apps={args.apps}",
                      f"reconcile_bench.py, {args.apps} apps", command, results_lines(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
