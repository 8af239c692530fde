#!/usr/bin/env python3
"""The canary's cost on the local fleet, and the fleet's health while it runs.

    python bench/canary_overhead.py                  # 3 grace periods, a round every 30 s
    python bench/canary_overhead.py --grace-periods 1 --interval 20 --results

Starts its own fleet (examples/platform), a spec repository of the platform, the platform
project and its daemon (goldpinger, one pod per node) with a canary policy for every
member cluster that sells the reserved tier, then runs `pincompile serve` twice for the
same time (the node controller's grace period times --grace-periods): without --canary
(the baseline) and with it. Reports per canary interval: probes, their API requests to the
member clusters (counted by the canary's client), serve's CPU seconds above the baseline,
launch seconds; and, over the canary's run, every node's and pod's move away from Ready
(watched, not sampled; the probes' own pods excluded). Prints numbers (``--results`` also
writes them to bench/RESULTS.md); it is not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from results import write_section  # noqa: E402

from reconciler.fleet import fleet as fleet_mod  # noqa: E402
from reconciler.fleet.clusters import load_clusters  # noqa: E402
from reconciler.fleet.control import node_monitor_grace_period  # noqa: E402
from reconciler.fleet.watch import ReadinessWatch  # noqa: E402

EXAMPLES = REPO / "examples"
LINES: list[str] = []


def say(line: str) -> None:
    print(line, flush=True)
    LINES.append(line)


def spec_repo(root: Path, interval: int) -> Path:
    """A bare repository of the platform, its project and daemon, and the canary policy."""
    work = root / "work"
    shutil.copytree(EXAMPLES / "platform", work / "platform",
                    ignore=shutil.ignore_patterns("projects"))
    (work / "platform/projects").mkdir()
    shutil.copy(EXAMPLES / "platform/projects/platform-system.yaml", work / "platform/projects")
    (work / "apps/platform-system").mkdir(parents=True)
    shutil.copy(EXAMPLES / "apps/platform-system/goldpinger.yaml", work / "apps/platform-system")
    (work / "pincompile.yaml").write_text(yaml.safe_dump({"canary": {
        "project": "platform-system", "interval": f"{interval}s",
        "timeout": f"{max(5, interval - 5)}s", "tiers": ["reserved"]}}))
    bare = root / "platform.git"

    def git(*args: str, cwd: Path = work) -> None:
        subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-qm", "specs")
    git("clone", "-q", "--bare", str(work), str(bare), cwd=root)
    return bare


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_serve(bare: Path, kubeconfig: Path, store: Path, log: Path, canary: bool
                ) -> tuple[subprocess.Popen[bytes], str]:
    command = [sys.executable, "-m", "pincompile.cli", "serve", "--repo", str(bare),
               "--listen", "127.0.0.1:0", "--kubeconfig", str(kubeconfig),
               "--no-leader-election", "--no-events", "--open-status", "--store",
               f"sqlite:///{store}"] + (["--canary"] if canary else [])
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log.open("w"), cwd=REPO)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        found = re.search(r"on (http://127\.0\.0\.1:\d+) as", log.read_text())
        if found:
            return proc, found.group(1)
        time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"serve did not start:\n{log.read_text()[-2000:]}")


def wait_applied(base: str) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{base}/status", timeout=30) as response:
            if json.load(response)["serve"].get("lastApplied"):
                return
        time.sleep(1)
    raise SystemExit("no pass applied within 300 s")


def measure(bare: Path, state: fleet_mod.FleetState, store: Path, log: Path, seconds: float,
            canary: bool) -> tuple[float, float, ReadinessWatch | None]:
    """serve's CPU seconds over ``seconds`` after its first pass (and the watch of the
    fleet meanwhile, with the canary), and when that window began (epoch)."""
    proc, base = start_serve(bare, state.kubeconfig, store, log, canary)
    try:
        wait_applied(base)
        time.sleep(5)
        watch = ReadinessWatch(state).start() if canary else None
        began, before = time.time(), cpu_seconds(proc.pid)
        time.sleep(seconds)
        used = cpu_seconds(proc.pid) - before
        if watch is not None:
            watch.stop()
        return used, began, watch
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grace-periods", type=float, default=3.0)
    parser.add_argument("--interval", type=int, default=30)
    parser.add_argument("--results", action="store_true")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="canary-bench-"))
    state = fleet_mod.up(EXAMPLES / "platform", root / "fleet", echo=lambda _m: None)
    try:
        members = [c.name for c in load_clusters(EXAMPLES / "platform")]
        grace = node_monitor_grace_period(state, members[0])
        seconds = grace * args.grace_periods
        bare = spec_repo(root / "repo", args.interval)
        say(f"fleet: {len(members)} member clusters; node grace period {grace:.0f}s; "
            f"window {seconds:.0f}s ({args.grace_periods:g} grace periods); canary interval "
            f"{args.interval}s; load average {os.getloadavg()[0]:.1f}")
        base_cpu, _, _ = measure(bare, state, root / "base.db", root / "base.log", seconds,
                                 canary=False)
        cpu, began, watch = measure(bare, state, root / "canary.db", root / "canary.log",
                                    seconds, canary=True)
        report(root / "canary.db", began, seconds, args.interval, base_cpu, cpu, watch)
    finally:
        fleet_mod.down(root / "fleet", echo=lambda _m: None)
        shutil.rmtree(root, ignore_errors=True)
    if args.results:
        write_section("canary", "Canary", "python bench/canary_overhead.py " +
                      " ".join(sys.argv[1:]), LINES)


def report(store: Path, began: float, seconds: float, interval: int, base_cpu: float,
           cpu: float, watch: ReadinessWatch | None) -> None:
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT cluster, ok, stage, launch_seconds, seconds, requests, "
                          "started FROM canary_probes").fetchall()
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(began))
    probes = [r for r in rows if str(r[6]) >= stamp]
    intervals = seconds / interval
    launches = sorted(r[3] for r in probes if r[3] is not None)
    say(f"probes in the window: {len(probes)} ({len(probes) / intervals:.1f} per interval, "
        f"{len({r[0] for r in probes})} clusters); failed: {sum(not r[1] for r in probes)}")
    if probes:
        requests = [r[5] for r in probes]
        say(f"API requests to member clusters: {statistics.mean(requests):.1f} per probe "
            f"(min {min(requests)}, max {max(requests)}), {sum(requests) / intervals:.0f} "
            "per interval (and one exec WebSocket per probe, which that count does not see)")
    if launches:
        say(f"launch seconds (submit to every replica Ready): median "
            f"{statistics.median(launches):.2f}, max {launches[-1]:.2f}")
    say(f"serve CPU: {cpu:.1f}s with the canary, {base_cpu:.1f}s without, over {seconds:.0f}s: "
        f"{(cpu - base_cpu) / intervals:.2f}s per interval for the canary")
    if watch is not None:
        flaps = watch.of("Node", "not-ready")
        lost = [t for t in watch.of("Pod") if t.what in ("not-ready", "deleted")
                and "/pincompile-canary-" not in t.name]
        say(f"node transitions away from Ready: {len(flaps)}; pods lost (not Ready or "
            f"deleted, the probes' own excluded): {len(lost)}; watch errors: "
            f"{len(watch.errors)}")
        for transition in [*flaps, *lost][:10]:
            say(f"  {transition}")


if __name__ == "__main__":
    main()
