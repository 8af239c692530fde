"""Measure the day-2 commands' wall time on a local fleet, beside kubectl doing the
comparable call in the same run: `--help`, `get apps`, `status`, `get pods`, `logs
--tail 10`, `exec -- true`, `describe`, `events`, `plan` of one app, the completion of a
command name.

It starts a fleet of its own (or, with ``--fleet DIR``, uses the running one there), applies
the examples' platform and search-api (a PinApp with its PinScaler: 12 pods over 3
clusters, each with the traffic and logging sidecars and the config-sync init container)
and waits for them; then runs every command once to warm up and ``--runs`` times more
(default 5), reporting the median and the spread, each pincompile command straight to the
clusters (no serve), as a tenant with the demo's kubeconfig would run it.

Targets (issue 40): `--help` <= 0.3 s; `get apps` and `status` <= 1 s; `get pods`, `logs
--tail 10`, `exec -- true` <= 1.5 s; `plan` of one app <= 3 s; completion <= 0.3 s.

Prints JSON; ``--results`` also writes bench/RESULTS.md. It is not a test; on a machine
that runs other fleets, take a lock around it as the e2e tests do.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).parent))

from results import write_section  # noqa: E402

from reconciler.fleet import build  # noqa: E402
from reconciler.fleet import fleet as fleet_mod  # noqa: E402

APP = "PinApp/search/search-api"
PINCOMPILE = str(Path(sys.executable).parent / "pincompile")


def spec_tree(root: Path) -> Path:
    """The examples' platform and search-api, as a git repository."""
    tree = root / "specs"
    shutil.copytree(REPO / "examples" / "platform", tree / "platform")
    shutil.copy(REPO / "examples" / "pincompile.yaml", tree)
    (tree / "apps" / "search").mkdir(parents=True)
    shutil.copy(REPO / "examples" / "apps" / "search" / "search-api.yaml",
                tree / "apps" / "search")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit",
                  "-qm", "bench"]):
        subprocess.run(["git", *args], cwd=tree, check=True, capture_output=True)
    return tree


def pairs(tree: Path) -> list[tuple[str, list[str], list[str] | None]]:
    """(what, pincompile's command, kubectl's comparable one)."""
    member = ["kubectl", "--context", "use1a-general-01", "-n", "search"]
    selector = "pincompute.io/app=search-api"
    return [
        ("--help", [PINCOMPILE, "--help"], ["kubectl", "--help"]),
        ("get apps", [PINCOMPILE, "get", "apps"],
         ["kubectl", "--context", "host", "get", "pinapps,pinscalers", "-A"]),
        ("status", [PINCOMPILE, "status"],
         ["kubectl", "--context", "host", "get", "pinapps,pinscalers", "-A"]),
        ("get pods", [PINCOMPILE, "get", "pods", APP], [*member, "get", "pods", "-l", selector]),
        ("logs --tail 10", [PINCOMPILE, "logs", APP, "--tail", "10"],
         [*member, "logs", "-l", selector, "-c", "main", "--tail", "10"]),
        ("exec -- true", [PINCOMPILE, "exec", APP, "-q", "--", "true"],
         [*member, "exec", "deploy/search-api", "-c", "main", "--", "true"]),
        ("describe", [PINCOMPILE, "describe", APP],
         [*member, "describe", "deploy/search-api"]),
        ("events", [PINCOMPILE, "events", APP], [*member, "get", "events"]),
        ("plan (one app)", [PINCOMPILE, "plan", str(tree), APP], None),
        ("completion", [PINCOMPILE], None),
    ]


def timed(command: list[str], env: dict[str, str]) -> float:
    started = time.monotonic()
    done = subprocess.run(command, env=env, capture_output=True, timeout=300)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}: "
                           f"{done.stderr.decode()[-500:]}")
    return seconds


def measure(kubeconfig: str, tree: Path, runs: int) -> dict[str, Any]:
    env = {**os.environ, "KUBECONFIG": kubeconfig}
    env.pop("PINCOMPILE_SERVER", None)
    completing = {**env, "_PINCOMPILE_COMPLETE": "bash_complete", "COMP_WORDS": "pincompile st",
                  "COMP_CWORD": "1"}
    out: dict[str, Any] = {}
    for what, ours, theirs in pairs(tree):
        mine = completing if what == "completion" else env
        timed(ours, mine)  # warm
        seconds = [timed(ours, mine) for _ in range(runs)]
        row: dict[str, Any] = {"median": round(statistics.median(seconds), 3),
                               "min": round(min(seconds), 3), "max": round(max(seconds), 3)}
        if theirs is not None:
            timed(theirs, env)
            kube = [timed(theirs, env) for _ in range(runs)]
            row["kubectl"] = round(statistics.median(kube), 3)
            row["kubectl_command"] = " ".join(theirs)
        out[what] = row
        print(f"{what}: {row}", file=sys.stderr)
    return out


def run(runs: int, fleet: Path | None) -> dict[str, Any]:
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="pincompile-cli-bench-") as scratch:
        tree = spec_tree(Path(scratch))
        directory = fleet or build.cache_root() / "fleet-bench-cli"
        state = (fleet_mod.read_state(directory) if fleet is not None else
                 fleet_mod.up(tree / "platform", directory, echo=lambda m: print(
                     m, file=sys.stderr)))
        assert state is not None, f"no fleet in {directory}"
        try:
            env = {**os.environ, "KUBECONFIG": str(state.kubeconfig)}
            subprocess.run([PINCOMPILE, "apply", str(tree), "--no-prune", "-q", "--timeout",
                            "10m"], env=env, check=True, capture_output=True)
            return {"load": round(load, 1), "runs": runs,
                    "commands": measure(str(state.kubeconfig), tree, runs)}
        finally:
            if fleet is None:
                fleet_mod.down(directory, echo=lambda m: None)
                shutil.rmtree(directory, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--fleet", type=Path, help="use the running fleet in this directory")
    parser.add_argument("--results", action="store_true", help="write bench/RESULTS.md")
    args = parser.parse_args()
    found = run(args.runs, args.fleet)
    print(json.dumps(found, indent=2))
    if args.results:
        lines = [f"Load average at start: {found['load']}; median of {found['runs']} warm "
                 "runs each, without serve (straight to the clusters).", "",
                 "| command | pincompile (s) | min..max | kubectl (s) | kubectl's call |",
                 "|---|---|---|---|---|"]
        for what, row in found["commands"].items():
            lines.append(f"| `{what}` | {row['median']} | {row['min']}..{row['max']} | "
                         f"{row.get('kubectl', '-')} | `{row.get('kubectl_command', '-')}` |")
        write_section("cli-latency", "Day-2 commands beside kubectl (`cli_latency.py`)",
                      "python bench/cli_latency.py --results", lines)


if __name__ == "__main__":
    main()
