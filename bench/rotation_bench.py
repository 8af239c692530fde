#!/usr/bin/env python3
"""Time per node rotated by ``pincompile rotate``, and what a rotation costs serve's passes,
on a local fleet.

    python bench/rotation_bench.py                 # 3 nodes, batch 1
    python bench/rotation_bench.py --pushes 5 --results

Starts a fleet of its own (the remediation e2e test's fixture: one member cluster of three
kwok nodes running a reserved PinApp of 3 replicas behind its PodDisruptionBudget, and a
JobSet), a bare git repository of its specs and ``pincompile serve`` (the real reconciler,
``--nodes-interval 1s``), waits for the first pass, then:

1. **Pass overhead.** ``--pushes`` pushes of a marker commit while no rotation runs, then
   as many while one runs: each pass's wall time (``/status`` lastPass.seconds) — a pass and
   the node round run in different threads of one process on the same cores.
2. **Time per node.** ``pincompile rotate`` (straight to the host) with the fleet's
   replacer playing the provider; per node, from its cordon to its replacement Ready (the
   Cluster's ``status.rotation``), and the whole rotation's wall time; the node rounds'
   mean and worst time (``pincompile_serve_nodes_round_seconds``).

Prints numbers; it is not a test. Takes its fleet down again.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "bench")]

from kubernetes import client as k8s  # noqa: E402
from results import write_section  # noqa: E402

from reconciler.clock import parse_time  # noqa: E402
from reconciler.fleet import build  # noqa: E402
from reconciler.fleet import fleet as fleet_mod  # noqa: E402
from reconciler.fleet.replacement import replacing  # noqa: E402
from reconciler.serve.webhooks import GENERIC_SIGNATURE_HEADER, sign  # noqa: E402
from tests.support.nodes import ReadyWatch, wait_until  # noqa: E402
from tests.support.serve import ServeProcess, SpecRepo, http, serve_status  # noqa: E402

FIXTURE = REPO / "tests" / "reconciler" / "fixtures" / "nodes"
CLUSTER = "heal-a"
SECRET = "bench-secret"


def push(serve: ServeProcess, repo: SpecRepo, n: int) -> float:
    """Push a marker commit; the seconds of the pass that applied it."""
    import json

    sha = repo.commit(f"marker {n}", {"apps/shop/marker.yaml": f"# {n}\n"})
    body = json.dumps({"ref": "refs/heads/main", "after": sha}).encode()
    status, _ = http("POST", f"{serve.base}/webhooks/generic", body, {
        "Content-Type": "application/json", GENERIC_SIGNATURE_HEADER:
        sign(SECRET.encode(), body)})
    assert status == 202
    state = wait_until(lambda: (s := serve_status(serve.base))["lastApplied"] and
                       s["lastApplied"]["revision"] == sha and not s["busy"] and s, 300,
                       "the pass")
    return float(state["lastPass"]["seconds"])


def rotation(host: Any) -> dict[str, Any]:
    cr = k8s.CustomObjectsApi(host).get_cluster_custom_object("pincompute.io", "v1",
                                                               "clusters", CLUSTER)
    return dict((cr.get("status") or {}).get("rotation") or {})


def metric(base: str, name: str) -> float:
    _, body = http("GET", f"{base}/metrics")
    for line in body.decode().splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def run(args: argparse.Namespace, work: Path) -> list[str]:
    state = fleet_mod.up(FIXTURE / "platform", work / "fleet", echo=lambda _m: None)
    try:
        from kubernetes import config

        member = config.new_client_from_config(str(state.kubeconfig), context=CLUSTER)
        host = config.new_client_from_config(str(state.kubeconfig), context="host")
        repo = SpecRepo(work / "repo", specs=FIXTURE)
        serve = ServeProcess(repo.bare, work / "audit.jsonl", "--kubeconfig",
                             str(state.kubeconfig), "--nodes-interval", "1s", "--resync",
                             "30m", "--open-status", identity="bench", real=True,
                             env={"PINCOMPILE_WEBHOOK_SECRET": SECRET})
        try:
            web = ReadyWatch(member, "shop", "pincompute.io/app=web")
            wait_until(lambda: web.ready_now == 3, 300, "web Ready")
            idle = [push(serve, repo, i) for i in range(args.pushes)]
            web.reset()
            busy: list[float] = []
            with replacing(member, "v2"):
                started = time.monotonic()
                subprocess.run([sys.executable, "-m", "pincompile.cli", "rotate", CLUSTER,
                                "--kubeconfig", str(state.kubeconfig)], check=True,
                               cwd=REPO, capture_output=True)
                while len(busy) < args.pushes and rotation(host).get("phase") != "Complete":
                    busy.append(push(serve, repo, 100 + len(busy)))
                wait_until(lambda: rotation(host).get("phase") == "Complete", 900,
                           "the rotation")
                took = time.monotonic() - started
            nodes = rotation(host)["nodes"]
            per = [(parse_time(n["since"]) or 0) - (parse_time(n["startedAt"]) or 0)
                   for n in nodes]
            rounds = metric(serve.base, "pincompile_serve_nodes_round_seconds_count")
            spent = metric(serve.base, "pincompile_serve_nodes_round_seconds_sum")
            fewest = web.fewest
            web.stop()
        finally:
            serve.stop()
    finally:
        fleet_mod.down(work / "fleet", echo=lambda _m: None)
    load = os.getloadavg()[0]
    return [
        f"- machine: {platform.machine()}, {os.cpu_count()} cores, load average {load:.1f} "
        f"at the end; fleet: 1 member cluster of {len(nodes)} kwok nodes, `--nodes-interval 1s`",
        f"- rotation of {len(nodes)} nodes, batch 1: **{took:.1f} s** wall; per node (cordon "
        f"to replacement Ready) median **{statistics.median(per):.1f} s**, max "
        f"{max(per):.1f} s ({', '.join(f'{p:.1f}' for p in per)})",
        f"- web (3 replicas, PodDisruptionBudget maxUnavailable 1): fewest Ready pods seen "
        f"during the rotation: {fewest}",
        f"- node rounds: {int(rounds)} rounds, mean {1000 * spent / max(rounds, 1):.1f} ms",
        f"- pass wall time, a marker push: median {statistics.median(idle):.2f} s with no "
        f"rotation ({len(idle)} passes), {statistics.median(busy):.2f} s during the rotation "
        f"({len(busy)} passes)" if busy else "- no pass ran during the rotation",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pushes", type=int, default=3)
    parser.add_argument("--results", action="store_true",
                        help="write the figures into bench/RESULTS.md")
    args = parser.parse_args()
    build.ensure_binaries(echo=lambda m: print(m, file=sys.stderr))
    with tempfile.TemporaryDirectory(prefix="rotation-bench-") as tmp:
        lines = run(args, Path(tmp))
    print("\n".join(lines))
    if args.results:
        write_section("rotation_bench", "rotation_bench.py, time per node rotated",
                      f"python bench/rotation_bench.py --pushes {args.pushes}", lines)


if __name__ == "__main__":
    main()
