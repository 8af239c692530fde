#!/usr/bin/env python3
"""Measure the local fleet: build time, warm start time, memory (RSS) and idle CPU.

    python bench/fleet_start.py                      # examples/platform, cached binaries
    python bench/fleet_start.py --clusters tests/e2e/fixtures/clusters --runs 3
    python bench/fleet_start.py --cold-build         # also a full compile (empty GOCACHE)
    python bench/fleet_start.py --runs 3 --results   # also write bench/RESULTS.md

Prints numbers (``--results`` also writes them to bench/RESULTS.md); it is not a test.
Uses its own fleet directory and takes it down again.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from results import write_section  # noqa: E402

from reconciler.fleet import build, sessions  # noqa: E402
from reconciler.fleet import fleet as fleet_mod  # noqa: E402
from reconciler.fleet.errors import FleetError  # noqa: E402
from reconciler.fleet.processes import Proc, is_alive  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")
#: what was printed, for ``--results``
LINES: list[str] = []


def say(line: str) -> None:
    """Print ``line`` and keep it for bench/RESULTS.md."""
    print(line)
    LINES.append(line)


def rss_kib(pid: int) -> int:
    """Resident set size of ``pid`` in KiB (0 if gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    match = re.search(r"^VmRSS:\s+(\d+) kB", text, re.M)
    return int(match.group(1)) if match else 0


def cpu_ticks(pid: int) -> int:
    """utime + stime of ``pid`` in clock ticks."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])


def pids_of(pid: int) -> list[int]:
    """A recorded process and its children (kwok runs as the child of its reaper)."""
    return [pid, *(p.pid for p in sessions.process_table().values() if p.ppid == pid)]


def component(proc: Proc) -> str:
    return proc.name.split("[", 1)[0]


def memory_report(procs: list[Proc]) -> int:
    """Print RSS per component; return the total in KiB."""
    per: dict[str, list[int]] = defaultdict(list)
    for proc in procs:
        if is_alive(proc):
            per[component(proc)].append(sum(rss_kib(pid) for pid in pids_of(proc.pid)))
    total = sum(sum(v) for v in per.values())
    for name, values in sorted(per.items(), key=lambda kv: -sum(kv[1])):
        say(f"    {name:<26} x{len(values):<2} {sum(values) / 1024:8.0f} MiB "
              f"(max {max(values) / 1024:.0f} MiB each)")
    say(f"    {'total':<30} {total / 1024:8.0f} MiB  ({len(procs)} processes)")
    return total


def idle_cpu(procs: list[Proc], seconds: float) -> float:
    """Cores used by the fleet while idle, averaged over ``seconds``."""
    pids = [pid for p in procs for pid in pids_of(p.pid)]
    before = {pid: cpu_ticks(pid) for pid in pids}
    time.sleep(seconds)
    used = sum(cpu_ticks(pid) - before[pid] for pid in pids)
    return used / TICKS / seconds


def cold_build() -> None:
    go = build.find_go()
    if go is None:
        say("cold build: skipped (no Go toolchain)")
        return
    with tempfile.TemporaryDirectory(prefix="fleet-cold-") as tmp:
        out = Path(tmp) / "bin"
        start = time.monotonic()
        build.go_build(go, build.module_dir(), out, Path(tmp) / "build.log",
                       extra_env={"GOCACHE": f"{tmp}/gocache"})
        took = time.monotonic() - start
        size = sum(f.stat().st_size for f in out.iterdir()) / 2**20
    say(f"cold build (empty Go build cache, modules already downloaded): {took:.0f}s, "
          f"binaries {size:.0f} MiB")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", default=str(REPO / "examples" / "platform"))
    parser.add_argument("--runs", type=int, default=1, help="warm starts to time")
    parser.add_argument("--settle", type=float, default=20.0,
                        help="seconds to wait after start before measuring memory/CPU")
    parser.add_argument("--cold-build", action="store_true",
                        help="also time a full compile with an empty GOCACHE (slow)")
    parser.add_argument("--results", action="store_true", help="write bench/RESULTS.md")
    args = parser.parse_args()

    try:
        bins = build.ensure_binaries()
    except FleetError as exc:
        print(f"error: {exc}\n{exc.log_tail}", file=sys.stderr)
        return 3
    stamp = (bins / build.STAMP).read_text().strip().replace("\n", "; ")
    say(f"binaries: {bins} ({stamp})")
    for other in sorted(bins.parent.glob(f"*/{build.STAMP}"), key=lambda p: p.stat().st_mtime):
        record = other.read_text().strip().replace("\n", "; ")
        say(f"    build record in the cache: {other.parent.name}: {record}")
    if args.cold_build:
        cold_build()

    directory = build.cache_root() / f"fleet-bench-{os.getpid()}"
    starts, downs = [], []
    try:
        for run in range(args.runs):
            start = time.monotonic()
            state = fleet_mod.up(args.clusters, directory, echo=lambda _m: None)
            starts.append(time.monotonic() - start)
            used = sum(cpu_ticks(pid) for p in state.procs for pid in pids_of(p.pid)) / TICKS
            say(f"warm start #{run + 1}: {starts[-1]:.1f}s  "
                f"({len(state.clusters) - 1} clusters + host, {len(state.procs)} processes; "
                f"they used {used:.0f} CPU-seconds to start; load average "
                f"{Path('/proc/loadavg').read_text().split()[0]})")
            for step, took in state.timings.items():
                say(f"    {step:<38} {took:6.1f}s")
            if run == args.runs - 1:
                time.sleep(args.settle)
                say(f"memory (RSS) {args.settle:.0f}s after start:")
                memory_report(state.procs)
                say(f"idle CPU: {idle_cpu(state.procs, 10.0):.2f} cores (10s average)")
            start = time.monotonic()
            fleet_mod.down(directory, echo=lambda _m: None)
            downs.append(time.monotonic() - start)
    except FleetError as exc:
        print(f"error: {exc}\n{exc.log_tail}", file=sys.stderr)
        return 3
    finally:
        fleet_mod.down(directory, echo=lambda _m: None)
        shutil.rmtree(directory, ignore_errors=True)
    say(f"warm start: min {min(starts):.1f}s, max {max(starts):.1f}s over {len(starts)} run(s)"
          f"; down: {max(downs):.1f}s")
    if args.results:
        load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
        command = "python bench/fleet_start.py " + " ".join(sys.argv[1:])
        write_section("fleet_start", "fleet_start.py, warm start and memory", command, [
            f"{os.cpu_count()} CPUs shared with other work (load average after the run "
            f"{load}); {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.", "", "```",
            *LINES, "```"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
