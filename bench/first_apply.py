#!/usr/bin/env python3
"""A first apply against ``kubectl apply --server-side`` of the same compiled tree, each on
a fresh fleet of its own, the order alternating between rounds.

    python bench/first_apply.py --apps 300 --rounds 2            # apply vs kubectl
    python bench/first_apply.py --apps 1000 --rounds 2 --serve   # serve's first pass too
    python bench/first_apply.py --apps 300 --rounds 2 --results  # and write RESULTS.md

The specs are ``reconcile_bench.py``'s N generated apps (3 member clusters and a host).
Each round, in turn (the first tool of one round is the last of the next):

* ``pincompile apply REPO --no-wait`` as users run it (compile included), every request
  recorded (``$PINCOMPILE_RECORD_REQUESTS``) and counted by cluster and verb;
* ``kubectl apply --server-side`` of each member's compiled objects (one ``v1/List`` per
  cluster, in apply order, the clusters in parallel), its requests counted from its
  ``-v=6`` log; kubectl writes nothing to the host (pincompile's host requests are counted
  apart);
* with ``--serve``: ``pincompile serve`` started on a bare git repository of the specs, the
  time to its first pass's end (``lastApplied`` in ``/status``), its requests by verb until
  then, and the time from a push changing one app's image (webhook 202) to the new image
  in every cluster (``serve_latency.py``'s round).

kubectl is built once from the Go module proxy at the fleet's Kubernetes version
(``hack/fleet/go.mod``) into ``~/.cache/pincompile/kubectl-bin`` (its build prints
progress; a later run reuses it; ``--kubectl PATH`` uses another). Prints JSON and a table;
``--results`` writes its section of RESULTS.md. Every fleet is taken down again.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "bench"), str(REPO / "tests" / "reconciler" / "serve")]

from reconcile_bench import cluster_lists, generate  # noqa: E402
from results import write_section  # noqa: E402

from pincompile.compiler import compile_path  # noqa: E402
from reconciler.clients.connect import classify  # noqa: E402
from reconciler.fleet import build  # noqa: E402
from reconciler.fleet import fleet as fleet_mod  # noqa: E402

KUBECTL_LOG = re.compile(r'verb="(\w+)" url="([^"]+)"|\] (GET|POST|PUT|PATCH|DELETE) (\S+) ')
TOOLS = ("pincompile", "kubectl")


def kubernetes_version() -> str:
    found = re.search(r"k8s\.io/kubernetes (v[\d.]+)",
                      (REPO / "hack" / "fleet" / "go.mod").read_text())
    assert found, "hack/fleet/go.mod pins no k8s.io/kubernetes"
    return found.group(1)


def ensure_kubectl() -> Path:
    """kubectl at the fleet's Kubernetes version, built once from the Go module proxy (the
    fleet's pinned modules) into the cache, under a file lock."""
    version = kubernetes_version()
    folder = build.cache_root() / "kubectl-bin"
    binary = folder / f"kubectl-{version}"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if binary.exists():
            return binary
        print(f"building kubectl {version} from the Go module proxy (once) ...", file=sys.stderr)
        with tempfile.TemporaryDirectory() as tmp:
            module = (REPO / "hack" / "fleet" / "go.mod").read_text()
            Path(tmp, "go.mod").write_text(module.replace(
                "module pincompile.local/hack/fleet", "module pincompile.local/bench/kubectl"))
            shutil.copy(REPO / "hack" / "fleet" / "go.sum", Path(tmp, "go.sum"))
            started = time.monotonic()
            subprocess.run(["go", "build", "-trimpath", "-o", str(binary),
                            "k8s.io/kubernetes/cmd/kubectl"], cwd=tmp, check=True,
                           env={**os.environ, "GOFLAGS": "-mod=mod"})
        print(f"built {binary} in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return binary


@contextmanager
def fresh_fleet(root: Path, tag: str) -> Iterator[fleet_mod.FleetState]:
    directory = build.cache_root() / f"fleet-bench-first-{tag}-{os.getpid()}"
    state = fleet_mod.up(root / "platform", directory, echo=lambda _m: None)
    try:
        yield state
    finally:
        fleet_mod.down(directory, echo=lambda _m: None)
        shutil.rmtree(directory, ignore_errors=True)


def verbs(requests: list[tuple[str, str, str]]) -> dict[str, dict[str, int]]:
    """(cluster, method, url) → per cluster, requests by verb (``classify``'s)."""
    out: dict[str, Counter[str]] = {}
    for cluster, method, url in requests:
        out.setdefault(cluster, Counter())[classify(method, url)[0]] += 1
    return {c: dict(sorted(v.items())) for c, v in sorted(out.items())}


def recorded(path: Path) -> dict[str, dict[str, int]]:
    """Per cluster, requests by verb from a ``$PINCOMPILE_RECORD_REQUESTS`` file."""
    out: dict[str, Counter[str]] = {}
    for request in _lines(path):
        verb = "dry-run" if request["dry_run"] else (
            request["verb"] if request["resource"] else "discovery")
        out.setdefault(request["cluster"], Counter())[verb] += 1
    return {c: dict(sorted(v.items())) for c, v in sorted(out.items())}


def write_spans(path: Path, since: float) -> dict[str, list[float]]:
    """Per cluster, its first and its last write request, in seconds after ``since``."""
    times: dict[str, list[float]] = {}
    for request in _lines(path):
        if request["verb"] in ("create", "patch", "update", "delete") and "at" in request:
            times.setdefault(request["cluster"], []).append(request["at"] - since)
    return {c: [round(min(t), 1), round(max(t), 1)] for c, t in sorted(times.items())}


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] \
        if path.exists() else []


def cpu_sample() -> tuple[dict[int, tuple[str, int]], list[int]]:
    """Each process's (program, CPU ticks), and the machine's /proc/stat CPU ticks."""
    from fleet_start import cpu_ticks

    out: dict[int, tuple[str, int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                out[int(entry.name)] = ((entry / "comm").read_text().rstrip("\n"),
                                        cpu_ticks(int(entry.name)))
            except (OSError, ValueError):
                continue
    machine = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    return out, machine


def cpu_between(before: tuple[dict[int, tuple[str, int]], list[int]],
                children: float) -> dict[str, Any]:
    """CPU seconds per program since ``before`` (the run's own children: ``children``
    seconds, counted as ``run``), and how busy the machine's CPUs were (share of all)."""
    after = cpu_sample()
    tick = os.sysconf("SC_CLK_TCK")
    use: Counter[str] = Counter()
    for pid, (name, total) in after[0].items():
        use[name] += total - before[0].get(pid, (name, total))[1]
    busy = [a - b for a, b in zip(after[1], before[1], strict=True)]
    idle = busy[3] + busy[4]  # idle, iowait
    programs = {n: round(t / tick, 1) for n, t in use.most_common(10) if t / tick >= 0.5}
    return {"programs": {"run": round(children, 1), **programs},
            "machine_busy": round(1 - idle / max(1, sum(busy)), 2)}


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_pincompile(state: fleet_mod.FleetState, root: Path, tmp: Path) -> dict[str, Any]:
    record = tmp / "pincompile-requests.jsonl"
    record.unlink(missing_ok=True)
    env = {**os.environ, "PINCOMPILE_RECORD_REQUESTS": str(record)}
    command = [sys.executable, "-m", "pincompile.cli", "apply", str(root), "--no-wait",
               "--kubeconfig", str(state.kubeconfig)]
    started, cpu, load = time.monotonic(), children_cpu(), os.getloadavg()[0]
    wall, sampled = time.time(), cpu_sample()
    run = subprocess.run(command, env=env, capture_output=True, text=True, cwd=REPO)
    used = cpu_between(sampled, children_cpu() - cpu)
    seconds = time.monotonic() - started
    (tmp / "apply.log").write_text(run.stdout + run.stderr)
    if run.returncode != 0:
        raise SystemExit(f"pincompile apply exited {run.returncode}: {run.stderr[-3000:]}")
    rates = re.findall(r"(\S+): applied (\d+)/\d+ \(([\d.]+)/s\)", run.stderr)
    return {"seconds": round(seconds, 1), "cpu": round(children_cpu() - cpu, 1),
            "requests": recorded(record), "load": [round(load, 1),
                                                   round(os.getloadavg()[0], 1)],
            "rates": {c: float(r) for c, _, r in rates},
            "writes_between": write_spans(record, wall), **used}


def run_kubectl(state: fleet_mod.FleetState, root: Path, tmp: Path, kubectl: Path
                ) -> dict[str, Any]:
    clusters = sorted(c.name for c in state.clusters if c.name != "host")
    files = cluster_lists(root, clusters, tmp)

    def one(cluster: str) -> list[tuple[str, str, str]]:
        run = subprocess.run(
            [str(kubectl), "--kubeconfig", str(state.kubeconfig), "--context", cluster,
             "apply", "--server-side", "--force-conflicts", "--field-manager",
             "kubectl-bench", "-f", str(files[cluster]), "-v=6"],
            capture_output=True, text=True)
        (tmp / f"kubectl-{cluster}.log").write_text(run.stdout + run.stderr)
        if run.returncode != 0:
            raise SystemExit(f"kubectl apply ({cluster}) failed: {run.stderr[-3000:]}")
        found = []
        for match in KUBECTL_LOG.finditer(run.stderr):
            method, url = (match.group(1), match.group(2)) if match.group(1) else \
                (match.group(3), match.group(4))
            found.append((cluster, method, url))
        return found

    started, cpu, load = time.monotonic(), children_cpu(), os.getloadavg()[0]
    sampled = cpu_sample()
    with ThreadPoolExecutor(max_workers=len(clusters)) as pool:
        requests = [r for rs in pool.map(one, clusters) for r in rs]
    return {"seconds": round(time.monotonic() - started, 1),
            "cpu": round(children_cpu() - cpu, 1), "requests": verbs(requests),
            "load": [round(load, 1), round(os.getloadavg()[0], 1)],
            **cpu_between(sampled, children_cpu() - cpu)}


def run_serve(state: fleet_mod.FleetState, root: Path, tmp: Path) -> dict[str, Any]:
    """serve's first pass on the fresh fleet, then one push round."""
    from kubernetes import config
    from serve_latency import SECRET, Target, serve_round

    from tests.support.serve import ServeProcess, SpecRepo, serve_status, wait_for

    target = Target(root, "apps/bench/app-00001.yaml", "bench", "app-00001",
                    ("rt-a", "rt-b", "rt-c"))
    out = tmp  # the bench's log folder of this run
    record, profile = out / "requests.jsonl", out / "profile.jsonl"
    repo = SpecRepo(Path(tempfile.mkdtemp(prefix="first-apply-serve-")), specs=root)
    clients: dict[str, Any] = {}

    def api(context: str) -> Any:
        if context not in clients:
            clients[context] = config.new_client_from_config(
                config_file=str(state.kubeconfig), context=context)
        return clients[context]

    started, load, wall = time.monotonic(), os.getloadavg()[0], time.time()
    serve = ServeProcess(
        repo.bare, out / "serve.jsonl", "--kubeconfig", str(state.kubeconfig),
        "--coalesce", "1s", "--runner", "serve_profile_runner:factory", identity="bench",
        real=True, env={"PINCOMPILE_WEBHOOK_SECRET": SECRET, "SERVE_PROFILE": str(profile),
                        "KUBECONFIG": str(state.kubeconfig),
                        "PINCOMPILE_RECORD_REQUESTS": str(record),
                        "PYTHONPATH": os.pathsep.join([str(REPO / "bench"), str(
                            REPO / "tests" / "reconciler" / "serve")])})
    try:
        status = wait_for(lambda: (s := serve_status(serve.base))["lastApplied"] and s,
                          timeout=3600, what="serve's first pass")
        first = time.monotonic() - started
        requests, spans = recorded(record), write_spans(record, wall)
        push = serve_round(api, repo, serve, target, "registry.internal/x/y:9.0.1", profile)
    finally:
        serve.stop()
        for client in clients.values():
            client.close()
    shutil.rmtree(repo.bare.parent, ignore_errors=True)
    return {"seconds": round(first, 1), "pass_seconds": status["lastPass"]["seconds"],
            "steps": status["lastPass"].get("steps"), "requests": requests,
            "push_to_applied": round(push["latency"], 2), "writes_between": spans,
            "load": [round(load, 1), round(os.getloadavg()[0], 1)], "log": str(out)}


def measure(apps: int, rounds: int, serve: bool, kubectl: Path) -> dict[str, Any]:
    out: dict[str, Any] = {"apps": apps, "rounds": [], "kubectl": str(kubectl),
                           "kubernetes": kubernetes_version()}
    tools = (*TOOLS, "serve") if serve else TOOLS
    logs = REPO / "bench" / "out" / time.strftime(f"first_apply-{apps}-%Y%m%d-%H%M%S")
    print(f"logs and recorded requests: {logs}", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        generate(root, apps)
        result = compile_path(root, revision="bench")
        out["objects"] = Counter(m.cluster for m in result.manifests)
        out["kinds"] = dict(sorted(Counter(m.kind for m in result.manifests).items()))
        for number in range(rounds):
            order = tools if number % 2 == 0 else tuple(reversed(tools))
            measured: dict[str, Any] = {"order": list(order)}
            for tool in order:
                with fresh_fleet(root, tool) as state:
                    work = logs / f"{tool}-{number + 1}"
                    work.mkdir(parents=True)
                    measured[tool] = (run_pincompile(state, root, work) if tool == "pincompile"
                                      else run_kubectl(state, root, work, kubectl)
                                      if tool == "kubectl" else run_serve(state, root, work))
                print(f"round {number + 1}, {tool}: {json.dumps(measured[tool])}",
                      file=sys.stderr)
            out["rounds"].append(measured)
    out["loadavg"] = [round(x, 1) for x in os.getloadavg()]
    out["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    return out


def members_total(requests: dict[str, dict[str, int]]) -> Counter[str]:
    return sum((Counter(v) for c, v in requests.items() if c != "host"), Counter())


def verbs_text(counts: Counter[str] | dict[str, int]) -> str:
    total = sum(counts.values())
    return f"{total}: " + ", ".join(f"{v} {n}" for v, n in sorted(
        counts.items(), key=lambda i: -i[1]))


def table(r: dict[str, Any]) -> list[str]:
    members = sum(r["objects"].values())
    kinds = ", ".join(f"{n} {k}" for k, n in r["kinds"].items())
    lines = [f"{r['apps']} PinApps ({r['apps'] // 5} with a cpu PinScaler) -> {members} objects "
             f"in {len(r['objects'])} member clusters ({kinds}); "
             f"each tool on a fresh fleet of its own, the order alternating; kubectl "
             f"{r['kubernetes']} built from the Go module proxy; 2 CPUs shared with other "
             f"work (load: the 1-minute load average at the start and the end of each run; "
             f"after the run {' '.join(map(str, r['loadavg']))}); {r['date']}.", "",
             "| round | tool | wall s | CPU s | requests to members, by verb | requests to "
             "the host, by verb | load | note |", "|---|---|---:|---:|---|---|---|---|"]
    for number, measured in enumerate(r["rounds"], start=1):
        for tool in measured["order"]:
            m = measured[tool]
            host = m["requests"].get("host", {})
            note = ""
            if tool == "pincompile" and m.get("rates"):
                note = "objects/s per cluster: " + ", ".join(
                    f"{c} {v:g}" for c, v in sorted(m["rates"].items()))
            if tool == "serve":
                note = (f"first pass {m['pass_seconds']:.1f} s by its own clock; then a push "
                        f"applied everywhere in {m['push_to_applied']} s")
            if m.get("programs"):
                cpu = ", ".join(f"{n} {v:g}" for n, v in m["programs"].items())
                note = "; ".join(x for x in (note, f"CPUs {100 * m['machine_busy']:.0f}% busy; "
                                             f"CPU s by program: {cpu}") if x)
            lines.append(f"| {number} | {tool} | {m['seconds']} | {m.get('cpu', '')} | "
                         f"{verbs_text(members_total(m['requests']))} | "
                         f"{verbs_text(host) if host else '-'} | "
                         f"{m['load'][0]} → {m['load'][1]} | {note} |")
    ratios = [m["kubectl"]["seconds"] / m["pincompile"]["seconds"] for m in r["rounds"]]
    lines += ["", f"kubectl / pincompile, wall, per round: "
                  f"{', '.join(f'{x:.2f}x' for x in ratios)} (target >= 2x)."]
    if "serve" in r["rounds"][0]:
        serve = [m["kubectl"]["seconds"] / m["serve"]["seconds"] for m in r["rounds"]]
        lines.append(f"kubectl / serve's first pass (to its end, waiting for health "
                     f"included), per round: {', '.join(f'{x:.2f}x' for x in serve)}.")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--apps", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--serve", action="store_true", help="serve's first pass too")
    parser.add_argument("--kubectl", type=Path, help="this kubectl instead of building one")
    parser.add_argument("--results", action="store_true",
                        help="also write this run's section of bench/RESULTS.md")
    args = parser.parse_args()
    build.ensure_binaries(echo=lambda m: print(m, file=sys.stderr))
    kubectl = args.kubectl or ensure_kubectl()
    report = measure(args.apps, args.rounds, args.serve, kubectl)
    print(json.dumps(report, indent=2))
    lines = table(report)
    print("\n".join(lines))
    if args.results:
        write_section(f"first_apply apps={args.apps}", f"first_apply.py, {args.apps} apps",
                      f"python bench/first_apply.py --apps {args.apps} --rounds {args.rounds}"
                      f"{' --serve' if args.serve else ''} --results", lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
