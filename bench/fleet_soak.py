#!/usr/bin/env python3
"""Soak the local fleet with examples/ applied: node flaps and pods lost over N minutes.

    python bench/fleet_soak.py                       # 5 minutes, examples/ on examples/platform
    python bench/fleet_soak.py --minutes 2 --no-leases   # the same with kwok's node Leases off

Starts its own fleet, server-side applies `pincompile compile EXAMPLES` to every member
cluster, waits until the workloads settle, then WATCHES every node and pod of every
cluster (host included) and counts: node transitions away from Ready, pods that lost
Ready while still running, Ready pods deleted, pods that ran to completion (Jobs; not a
loss). The best possible result is 0 / 0 / 0. `--no-leases` runs kwok as the fleet did
before it had per-node Leases (the baseline this fixes). Prints numbers (``--results`` also
writes them to bench/RESULTS.md); it is not a test.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from results import write_section  # noqa: E402

from reconciler.fleet import build, profiles  # noqa: E402
from reconciler.fleet import fleet as fleet_mod  # noqa: E402
from reconciler.fleet.errors import FleetError  # noqa: E402
from reconciler.fleet.health import is_ready  # noqa: E402
from reconciler.fleet.watch import ReadinessWatch  # noqa: E402

CLUSTER_SCOPED_FIRST = ("Namespace", "CustomResourceDefinition", "PriorityClass")
#: what was printed, for ``--results``
LINES: list[str] = []


def say(line: str) -> None:
    """Print ``line`` and keep it for bench/RESULTS.md."""
    print(line)
    LINES.append(line)


def compile_examples(examples: Path, out: Path) -> None:
    subprocess.run([sys.executable, "-m", "pincompile.cli", "compile", str(examples), "--out-dir",
                    str(out), "-q"], check=True, cwd=REPO)


def apply_cluster(state: fleet_mod.FleetState, context: str, directory: Path) -> tuple[
        int, list[str]]:
    """Server-side apply every manifest under ``directory``; (applied, errors)."""
    from kubernetes.dynamic import DynamicClient
    from kubernetes.dynamic.exceptions import DynamicApiError, ResourceNotFoundError

    docs = [d for f in sorted(directory.rglob("*.yaml"))
            for d in yaml.safe_load_all(f.read_text()) if d]
    docs.sort(key=lambda d: d["kind"] not in CLUSTER_SCOPED_FIRST)
    api = fleet_mod.api_client(state, context)
    applied, errors = 0, []
    try:
        dyn = DynamicClient(api)
        for doc in docs:
            meta = doc["metadata"]
            try:
                resource = dyn.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
                dyn.server_side_apply(resource, body=doc, name=meta["name"],
                                      namespace=meta.get("namespace"),
                                      field_manager="pincompile-bench", force_conflicts=True)
                applied += 1
            except (DynamicApiError, ResourceNotFoundError) as exc:
                reason = getattr(exc, "reason", None) or type(exc).__name__
                errors.append(f"{doc['kind']}/{meta.get('namespace', '')}/{meta['name']}: "
                              f"{reason}")
    finally:
        api.close()
    return applied, errors


def ready_pods(state: fleet_mod.FleetState) -> tuple[int, int, Counter[str]]:
    """(Ready pods, running-or-pending pods, why the others are not Ready) over the fleet."""
    from kubernetes import client

    ready = live = 0
    why: Counter[str] = Counter()
    for runtime in state.clusters:
        api = fleet_mod.api_client(state, runtime.context)
        try:
            pods: Any = client.CoreV1Api(api).list_pod_for_all_namespaces().items
        finally:
            api.close()
        for pod in pods:
            if pod.status.phase not in ("Running", "Pending"):
                continue
            live += 1
            if is_ready(pod):
                ready += 1
                continue
            conds = {c.type: c for c in pod.status.conditions or []}
            sched = conds.get("PodScheduled")
            if sched is not None and sched.status == "False":
                why[f"Pending, {sched.reason}"] += 1
            else:
                why[f"{pod.status.phase}, not Ready"] += 1
    return ready, live, why


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--clusters", default=str(REPO / "examples" / "platform"))
    parser.add_argument("--examples", default=str(REPO / "examples"))
    parser.add_argument("--settle", type=float, default=60.0,
                        help="seconds to let the applied workloads settle before watching")
    parser.add_argument("--no-leases", action="store_true",
                        help="baseline: kwok without node Leases (as before issue 14)")
    parser.add_argument("--results", action="store_true", help="write bench/RESULTS.md")
    args = parser.parse_args()
    if args.no_leases:
        # kwok then relies on the 10-20 min status stage
        profiles.PROFILES[profiles.DEFAULT] = dataclasses.replace(
            profiles.PROFILES[profiles.DEFAULT], node_lease_seconds=0)

    try:
        build.ensure_binaries()
    except FleetError as exc:
        print(f"error: {exc}\n{exc.log_tail}", file=sys.stderr)
        return 3
    directory = build.cache_root() / f"fleet-soak-{os.getpid()}"
    out = Path(tempfile.mkdtemp(prefix="soak-manifests-"))
    try:
        start = time.monotonic()
        state = fleet_mod.up(args.clusters, directory, echo=lambda _m: None)
        say(f"fleet up in {time.monotonic() - start:.0f}s: {len(state.clusters)} control "
              f"planes, kwok node leases {'OFF' if args.no_leases else 'on'}")
        shutil.rmtree(out)
        compile_examples(Path(args.examples), out)
        total, failures = 0, []
        for runtime in state.clusters:
            if (out / runtime.name).is_dir():
                applied, errors = apply_cluster(state, runtime.context, out / runtime.name)
                total += applied
                failures += errors
        say(f"applied {total} objects of {args.examples} (server-side), "
              f"{len(failures)} failed" + "".join(f"\n    {e}" for e in failures[:10]))
        time.sleep(args.settle)
        ready, live, why = ready_pods(state)
        say(f"after {args.settle:.0f}s: {ready}/{live} live pods Ready (others: "
              f"{dict(why) or 'none'}); watching every node and pod for {args.minutes:g} min")
        watch = ReadinessWatch(state).start()
        time.sleep(args.minutes * 60)
        watch.stop()
        nodes = Counter(t.cluster for t in watch.of("Node", "not-ready"))
        pods = {what: len(watch.of("Pod", what))
                for what in ("not-ready", "deleted", "completed")}
        ready_end, live_end, why_end = ready_pods(state)
        say(f"node transitions away from Ready: {sum(nodes.values())} "
              f"({dict(nodes) or 'none'})")
        say(f"pods that lost Ready while running: {pods['not-ready']}; Ready pods deleted: "
              f"{pods['deleted']}; ran to completion (not a loss): {pods['completed']}")
        say(f"at the end: {ready_end}/{live_end} live pods Ready (others: "
              f"{dict(why_end) or 'none'}); watch errors: {len(watch.errors)}")
        for transition in (watch.of("Node") + watch.of("Pod", "not-ready"))[:10]:
            say(f"    {transition}")
    except FleetError as exc:
        print(f"error: {exc}\n{exc.log_tail}", file=sys.stderr)
        return 3
    finally:
        fleet_mod.down(directory, echo=lambda _m: None)
        shutil.rmtree(directory, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
    if args.results:
        write_results(args.no_leases)
    return 0


def write_results(no_leases: bool) -> None:
    """Put what was printed into bench/RESULTS.md (its own section per lease mode)."""
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    command = "python bench/fleet_soak.py " + " ".join(sys.argv[1:])
    marker = "fleet_soak no-leases" if no_leases else "fleet_soak"
    write_section(marker, f"fleet_soak.py{', without node Leases' if no_leases else ''}",
                  command, [
                      f"{os.cpu_count()} CPUs shared with other work (load average after "
                      f"the run {load}); {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
                      "", "```", *LINES, "```"])


if __name__ == "__main__":
    sys.exit(main())
