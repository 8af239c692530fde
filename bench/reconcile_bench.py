#!/usr/bin/env python3
"""Measure the reconciler on a local fleet: apply throughput and a no-op pass.

    python bench/reconcile_bench.py --apps 1000        # 1,000 PinApps x 3 clusters

Generates N PinApps (3 replicas each, spread over three zonal clusters: a Deployment, a
Service and a PodDisruptionBudget per app and cluster), starts a fleet of its own, then:

1. first pass (everything is created): object writes per minute per cluster, against the
   baseline of the same objects created by plain server-side apply requests through the
   same client with no planning at all (the fastest this client and API server can
   write them), measured in the same run on a second namespace;
2. a second pass with nothing changed: write requests (must be 0), LIST requests per
   (cluster, resource), wall time.

Prints numbers; it is not a test. Takes its fleet down again.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pincompile.pipeline import compile_path  # noqa: E402
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
    (root / "apps").mkdir()
    for i in range(apps):
        (root / "apps" / f"app-{i:05d}.yaml").write_text(APP.format(i=i))


def run_pass(kubeconfig: str, root: Path) -> dict[str, object]:
    result = compile_path(root, revision="bench")
    assert result.ok, result.diagnostics[:3]
    reconciler = Reconciler(kubeconfig, wait=False)
    started = time.monotonic()
    report = reconciler.run(result)
    seconds = time.monotonic() - started
    writes = {n: c.stats.writes for n, c in reconciler.connections.items()}
    lists = Counter({f"{n}/{r}": k for n, c in reconciler.connections.items()
                     for r, k in c.stats.lists.items()})
    dry_runs = {n: c.stats.by_verb["dry-run"] for n, c in reconciler.connections.items()}
    reconciler.close()
    members = {n: c for n, c in report.clusters.items() if n != "host"}
    return {"seconds": round(seconds, 1), "ok": report.ok,
            "objects": len(result.manifests),
            "created": {n: len(c.created) for n, c in members.items()},
            "writes": writes, "dry_runs": dry_runs,
            "max_lists_per_resource": max(lists.values()) if lists else 0,
            "lists": sum(lists.values())}


def baseline(kubeconfig: str, root: Path, cluster: str) -> dict[str, float]:
    """Plain server-side applies of one cluster's objects, into namespace bench-baseline."""
    result = compile_path(root, revision="bench")
    conn = Connection(cluster, cluster, kubeconfig)
    objs = [m.obj for m in result.manifests if m.cluster == cluster and m.namespace == "bench"]
    write.apply(conn, {"apiVersion": "v1", "kind": "Namespace",
                       "metadata": {"name": "bench-baseline"}})
    from concurrent.futures import ThreadPoolExecutor

    def one(obj: dict[str, object]) -> None:
        obj = json.loads(json.dumps(obj))
        obj["metadata"]["namespace"] = "bench-baseline"  # type: ignore[index]
        write.apply(conn, obj)

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(one, objs))
    seconds = time.monotonic() - started
    conn.close()
    return {"objects": len(objs), "seconds": round(seconds, 1),
            "per_minute": round(len(objs) / seconds * 60)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--apps", type=int, default=1000)
    args = parser.parse_args()
    build.ensure_binaries(echo=lambda m: print(m, file=sys.stderr))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        generate(root, args.apps)
        directory = build.cache_root() / "fleet-bench-reconcile"
        state = fleet_mod.up(PLATFORM, directory, echo=lambda m: print(m, file=sys.stderr))
        try:
            kubeconfig = str(state.kubeconfig)
            first = run_pass(kubeconfig, root)
            per_cluster = {n: round(k / first["seconds"] * 60)  # type: ignore[operator]
                           for n, k in first["created"].items()}  # type: ignore[attr-defined]
            noop = run_pass(kubeconfig, root)
            base = baseline(kubeconfig, root, "rt-a")
        finally:
            fleet_mod.down(directory, echo=lambda _m: None)
            shutil.rmtree(directory, ignore_errors=True)
    out = {"apps": args.apps, "first_pass": first, "writes_per_minute_per_cluster": per_cluster,
           "noop_pass": noop, "baseline_plain_ssa_rt-a": base}
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
