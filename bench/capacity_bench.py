#!/usr/bin/env python3
"""The zone-loss check at 1,000 apps x 6 clusters (target: <= 2 s).

    python bench/capacity_bench.py                  # 1,000 apps, best of 5
    python bench/capacity_bench.py --apps 10000 --repeat 3
    python bench/capacity_bench.py --results        # and update bench/RESULTS.md

Generates the repository ``compile_bench.py`` generates (examples/platform's 6 clusters in
4 zones, N apps) and measures:

  simulate     ``pincompile.capacity.simulate`` in process, on a compiled tree: every zone
               (or every cluster) lost in turn, its workloads placed again, the
               survivors' pools summed; in one process and with -j (half the losses in a
               forked process)
  cli          ``pincompile capacity REPO`` as a subprocess, warm parse cache: imports,
               load, parse, check, place, the losses, the tables
  validate     ``pincompile validate REPO`` with and without ``survive`` in
               pincompile.yaml, warm cache: what the check adds to a pre-commit run
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.compile_bench import _machine, _pincompile, generate
from bench.results import write_section


def best(values: list[float]) -> str:
    return f"{min(values):.2f} (median {statistics.median(values):.2f})"


def in_process(root: Path, cache: Path, repeat: int) -> dict[str, Any]:
    from pincompile.capacity import compile_tree, simulate
    from pincompile.forked import cpus

    result = compile_tree(root, cache, cpus())
    assert result.ok, result.diagnostics[:3]
    out: dict[str, Any] = {}
    for lose in ("zone", "cluster"):
        for jobs in sorted({1, cpus()}):
            walls = []
            for _ in range(repeat):
                started = time.perf_counter()
                report = simulate(result, lose, jobs=jobs)
                walls.append(time.perf_counter() - started)
            moved = sum(len(loss.moved) for loss in report.losses)
            out[f"{lose} -j {jobs}"] = (walls, len(report.losses), moved)
    return out


def cli(args: list[str], repeat: int) -> list[float]:
    walls = []
    for _ in range(repeat):
        started = time.perf_counter()
        done = subprocess.run([*_pincompile(), *args], capture_output=True, text=True,
                              check=False)
        walls.append(time.perf_counter() - started)
        if done.returncode not in (0, 1):
            sys.exit(f"{args} failed:\n{done.stderr}")
    return walls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--apps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--results", action="store_true")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="capacity-bench-") as tmp:
        root, cache = Path(tmp) / "repo", Path(tmp) / "cache"
        counts = generate(root, options.apps, options.seed)
        load_before = os.getloadavg()
        measured = in_process(root, cache, options.repeat)
        command = ["capacity", str(root), "--cache-dir", str(cache)]
        capacity = cli(command, options.repeat)
        validate = cli(["validate", str(root), "--cache-dir", str(cache), "-q"], options.repeat)
        (root / "pincompile.yaml").write_text("survive: {lose: zone, tiers: [reserved]}\n")
        checked = cli(["validate", str(root), "--cache-dir", str(cache), "-q"], options.repeat)
        load_after = os.getloadavg()
    lines = [
        f"{options.apps} apps ({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))}), "
        f"6 clusters in 4 zones; {_machine()}; load average {load_before[0]:.1f} before, "
        f"{load_after[0]:.1f} after; seconds, best of {options.repeat} (median); "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.", "",
        "| measured | seconds | note |", "|---|---:|---|"]
    for name, (walls, losses, moved) in measured.items():
        lines.append(f"| simulate, lose each {name} | {best(walls)} | {losses} losses, "
                     f"{moved} workloads placed again in all |")
    lines += [
        f"| **`pincompile capacity`**, CLI wall, warm cache | **{best(capacity)}** | target "
        "<= 2 s: load, check, place, every zone lost in turn, tables |",
        f"| `pincompile validate -q`, warm cache, no `survive` | {best(validate)} | |",
        f"| `pincompile validate -q`, warm cache, `survive: {{lose: zone}}` | {best(checked)} "
        "| the loss check added |"]
    print("\n".join(lines))
    if options.results:
        write_section(f"capacity_bench apps={options.apps}",
                      f"capacity_bench.py, {options.apps} apps x 6 clusters",
                      f"python bench/capacity_bench.py --apps {options.apps} --results", lines)
    print(json.dumps({k: v[0] for k, v in measured.items()}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
