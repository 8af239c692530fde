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
import resource
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
    compiling = time.monotonic()
    result = compile_path(root, revision="bench")
    compiled = time.monotonic() - compiling
    assert result.ok, result.diagnostics[:3]
    reconciler = Reconciler(kubeconfig)
    started, cpu = time.monotonic(), cpu_seconds()
    with reconciler.pass_of(result) as flight:
        pass  # no wait for health
    report = flight.report
    seconds, cpu = time.monotonic() - started, cpu_seconds() - cpu
    stats = {n: c.stats for n, c in reconciler.connections.items()}
    reconciler.close()
    lists = Counter({f"{n}/{r}": k for n, s in stats.items() for r, k in s.lists.items()})
    members = {n: c for n, c in report.clusters.items() if n != "host"}
    return {"seconds": round(seconds, 1), "cpu": round(cpu, 1), "ok": report.ok,
            "compile_seconds": round(compiled, 1),
            "objects": len(result.manifests),
            "created": {n: len(c.created) for n, c in members.items()},
            "updated": sum(len(c.updated) for c in members.values()),
            "writes": {n: s.writes for n, s in stats.items()},
            "member_writes": sum(s.writes for n, s in stats.items() if n != "host"),
            "dry_runs": {n: s.by_verb["dry-run"] for n, s in stats.items()},
            "gets": sum(s.by_verb["get"] for s in stats.values()),
            "max_lists_per_resource": max(lists.values()) if lists else 0,
            "lists": sum(lists.values()), "load": round(os.getloadavg()[0], 1),
            # (getattr: the reconciler of an older --before revision has neither)
            "steps": getattr(report, "steps", {}), "listed": list_timings(stats)}


def list_timings(stats: dict[str, Any]) -> dict[str, Any]:
    """Per member cluster: its LISTs' total bytes, objects, slowest request and parse
    seconds (summed), and the three slowest LISTs (resource, seconds, MB, objects)."""
    out: dict[str, Any] = {}
    for name, s in sorted(stats.items()):
        timed = list(getattr(s, "listed", []))
        if not timed:
            continue
        slowest = sorted(timed, key=lambda t: -t.seconds)[:3]
        out[name] = {
            "mb": round(sum(t.size for t in timed) / 1e6, 1),
            "objects": sum(t.objects for t in timed),
            "slowest_request_s": round(max(t.seconds for t in timed), 2),
            "parse_s": round(sum(t.parse_seconds for t in timed), 2),
            "top": [[t.resource, round(t.seconds, 2), round(t.size / 1e6, 1), t.objects]
                    for t in slowest]}
    return out


def cpu_seconds() -> float:
    """CPU time of this process so far (user + system, every thread)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


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


def list_baseline(kubeconfig: str, clusters: list[str], **query: str) -> dict[str, Any]:
    """The API servers' own cost of a pass's reads: the same LISTs (every managed kind
    served, the same selectors) of every member cluster, all at once, each body read and
    nothing more (no parse, no check); ``query``: extra LIST parameters
    (``resource_version="0"``). Wall seconds of the slowest and the MB read."""
    from reconciler import kinds
    from reconciler.clients import read

    conns = {c: Connection(c, c, kubeconfig) for c in clusters}
    work = [(conns[c], k) for c in clusters for k in kinds.MANAGED_KINDS
            if read.served(conns[c], k)]

    def one(item: tuple[Connection, Any]) -> tuple[float, int]:
        conn, kind = item
        started = time.monotonic()
        response = conn.resource(kind.api_version, kind.kind).get(
            **read.selector(kind=kind), serialize=False, **query)
        return time.monotonic() - started, len(response.data)

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=len(work)) as pool:
        done = list(pool.map(one, work))
    seconds = time.monotonic() - started
    for conn in conns.values():
        conn.close()
    return {"seconds": round(seconds, 1), "lists": len(work),
            "slowest": round(max(t for t, _ in done), 2),
            "mb": round(sum(b for _, b in done) / 1e6, 1), "load": round(os.getloadavg()[0], 1)}


def cpu_by_program(seconds: float = 10.0) -> dict[str, float]:
    """What uses the CPU: each program's share of one core over ``seconds`` (all its
    processes: the fleet's three kube-apiservers are one row), from /proc, busiest first."""
    from fleet_start import cpu_ticks

    def sample() -> dict[int, tuple[str, int]]:
        out: dict[int, tuple[str, int]] = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                name = (entry / "comm").read_text().rstrip("\n")
            except OSError:
                continue
            out[int(entry.name)] = (name, cpu_ticks(int(entry.name)))
        return out

    before = sample()
    time.sleep(seconds)
    after = sample()
    ticks = os.sysconf("SC_CLK_TCK") * seconds
    use: Counter[str] = Counter()
    for pid, (name, total) in after.items():
        use[name] += total - before.get(pid, (name, total))[1]
    return {name: round(100 * t / ticks, 1) for name, t in use.most_common(12) if t > 0}


def kubectl() -> str | None:
    """The ``kubectl`` on PATH (the baselines fall back to the reconciler's client)."""
    return shutil.which("kubectl")


def cluster_lists(root: Path, clusters: list[str], out: Path,
                  namespace: str | None = None) -> dict[str, Path]:
    """The compiled tree, one ``v1/List`` file per cluster in apply order (namespaces
    first), for ``kubectl apply -f``; with ``namespace``, the objects of namespace bench
    moved there (a Namespace of that name first)."""
    from reconciler import kinds

    result = compile_path(root, revision="bench")
    files: dict[str, Path] = {}
    for cluster in clusters:
        objs = sorted((m.obj for m in result.manifests if m.cluster == cluster),
                      key=lambda o: kinds.order(o["kind"]))
        if namespace is not None:
            objs = [{**o, "metadata": {**o["metadata"], "namespace": namespace}}
                    for o in objs if o["metadata"].get("namespace") == "bench"]
            objs.insert(0, {"apiVersion": "v1", "kind": "Namespace",
                            "metadata": {"name": namespace}})
        files[cluster] = out / f"{cluster}{'-' + namespace if namespace else ''}.json"
        files[cluster].write_text(json.dumps({"apiVersion": "v1", "kind": "List",
                                              "items": objs}))
    return files


def kubectl_apply(kubeconfig: str, files: dict[str, Path]) -> dict[str, Any]:
    """``kubectl apply --server-side`` of each cluster's file, the clusters in parallel."""
    binary = kubectl()
    assert binary is not None

    def one(cluster: str) -> int:
        run = subprocess.run(
            [binary, "--kubeconfig", kubeconfig, "--context", cluster, "apply",
             "--server-side", "--force-conflicts", "--field-manager", "kubectl-bench",
             "-f", str(files[cluster])], capture_output=True, text=True)
        if run.returncode != 0:
            raise SystemExit(f"kubectl apply ({cluster}) failed: {run.stderr[-2000:]}")
        return len(run.stdout.splitlines())

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=len(files)) as pool:
        objects = sum(pool.map(one, list(files)))
    return {"objects": objects, "seconds": round(time.monotonic() - started, 1),
            "tool": "kubectl apply --server-side", "load": round(os.getloadavg()[0], 1)}


def reapply_everything(kubeconfig: str, root: Path, clusters: list[str]) -> dict[str, Any]:
    """Every compiled object server-side applied again, the clusters in parallel: with
    ``kubectl apply --server-side`` of each cluster's compiled tree when kubectl is on
    PATH, else one PATCH each through the reconciler's client, 8 at a time per cluster
    (the same requests): the baseline for a no-op pass."""
    if kubectl():
        with tempfile.TemporaryDirectory() as tmp:
            return kubectl_apply(kubeconfig, cluster_lists(root, clusters, Path(tmp)))
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
    return {"objects": sum(len(v) for v in by_cluster.values()), "seconds": round(seconds, 1),
            "tool": "the reconciler's client (no kubectl on PATH)",
            "load": round(os.getloadavg()[0], 1)}


def create_baseline(kubeconfig: str, root: Path, clusters: list[str]) -> dict[str, Any]:
    """The first apply's baseline: every cluster's objects of namespace bench created in a
    new namespace, bench-baseline, by ``kubectl apply --server-side`` of the compiled tree
    per cluster, the clusters in parallel (without kubectl: plain server-side applies
    through the reconciler's client, 8 at a time per cluster)."""
    if kubectl():
        with tempfile.TemporaryDirectory() as tmp:
            out = kubectl_apply(kubeconfig, cluster_lists(root, clusters, Path(tmp),
                                                          namespace="bench-baseline"))
    else:
        result = compile_path(root, revision="bench")
        conns = {c: Connection(c, c, kubeconfig) for c in clusters}

        def one_cluster(cluster: str) -> int:
            conn = conns[cluster]
            objs = [{**m.obj, "metadata": {**m.obj["metadata"], "namespace": "bench-baseline"}}
                    for m in result.manifests
                    if m.cluster == cluster and m.namespace == "bench"]
            write.apply(conn, {"apiVersion": "v1", "kind": "Namespace",
                               "metadata": {"name": "bench-baseline"}})
            with ThreadPoolExecutor(max_workers=8) as pool:
                list(pool.map(lambda o: write.apply(conn, o), objs))
            return len(objs) + 1

        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=len(clusters)) as pool:
            objects = sum(pool.map(one_cluster, clusters))
        out = {"objects": objects, "seconds": round(time.monotonic() - started, 1),
               "tool": "the reconciler's client (no kubectl on PATH)",
               "load": round(os.getloadavg()[0], 1)}
        for conn in conns.values():
            conn.close()
    out["per_minute_per_cluster"] = round(out["objects"] / len(clusters) / out["seconds"] * 60)
    return out


def measure(apps: int, before: str | None, fleet: Path | None = None,
            reapply: bool = True) -> dict[str, Any]:
    """The passes and baselines on a fleet of this bench's own, or (``fleet``) on the
    running fleet in that directory, which already holds the same apps: then no first
    pass and no creation baseline, and the fleet is left running. ``reapply``: also the
    re-apply baseline and the no-op pass after it."""
    build.ensure_binaries(echo=lambda m: print(m, file=sys.stderr))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        generate(root, apps)
        directory = fleet or build.cache_root() / "fleet-bench-reconcile"
        state = fleet_mod.up(PLATFORM, directory, echo=lambda m: print(m, file=sys.stderr))
        try:
            kubeconfig = str(state.kubeconfig)
            out: dict[str, Any] = {"apps": apps}
            if fleet is None:
                out["first_pass"] = run_pass(kubeconfig, root)
                print(f"first pass: {out['first_pass']}", file=sys.stderr)
            out["noop_pass"] = run_pass(kubeconfig, root)
            print(f"no-op pass: {out['noop_pass']}", file=sys.stderr)
            out["noop_pass_again"] = run_pass(kubeconfig, root)
            clusters = sorted(out["noop_pass"]["created"])
            out["idle_cpu"] = cpu_by_program()
            out["idle_load"] = round(os.getloadavg()[0], 1)
            out["lists_raw"] = list_baseline(kubeconfig, clusters)
            out["lists_raw_rv0"] = list_baseline(kubeconfig, clusters, resource_version="0")
            if before:
                out["before"] = {"revision": before,
                                 "noop_pass": pass_with(before, kubeconfig, root)}
            if reapply:
                out["reapply_everything"] = reapply_everything(kubeconfig, root, clusters)
                out["noop_after_reapply"] = run_pass(kubeconfig, root)
            if fleet is None:
                out["create_baseline"] = create_baseline(kubeconfig, root, clusters)
        finally:
            if fleet is None:
                fleet_mod.down(directory, echo=lambda _m: None)
                shutil.rmtree(directory, ignore_errors=True)
    if "first_pass" in out:
        first = out["first_pass"]
        out["writes_per_minute_per_cluster"] = {
            n: round(k / first["seconds"] * 60) for n, k in first["created"].items()}
    out["loadavg"] = [round(x, 1) for x in os.getloadavg()]
    return out


def results_lines(r: dict[str, Any]) -> list[str]:
    def row(name: str, p: dict[str, Any], note: str = "") -> str:
        dry = sum(v for n, v in p["dry_runs"].items() if n != "host")
        return (f"| {name} | {p['seconds']} | {p.get('cpu', '')} | {p['member_writes']} | "
                f"{p['writes'].get('host', 0)} | {dry} | {p['dry_runs'].get('host', 0)} | "
                f"{p['lists']} (max {p['max_lists_per_resource']} per resource) | "
                f"{p.get('load', '')} | {note} |")

    noop = r["noop_pass"]
    lines = [f"{r['apps']} PinApps ({r['apps'] // 5} with a cpu PinScaler) -> "
             f"{noop['objects']} objects in 3 member clusters; 2 CPUs shared with other "
             f"work (load: the 1-minute load average at the end of each row's run; "
             f"after the run {' '.join(map(str, r['loadavg']))}); "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.", "",
             "| pass | wall s | CPU s | writes to members | writes to host | dry-runs (members) "
             "| dry-runs (host) | LISTs | load | note |",
             "|---|---:|---:|---:|---:|---:|---:|---|---:|---|"]
    if "first_pass" in r:
        first = r["first_pass"]
        lines.append(row("first pass (creates everything)", first,
                         f"{sum(first['created'].values())} created"))
    else:
        lines.append("| first pass | | | | | | | | | not measured: run on a fleet that "
                     "already held these apps (`--fleet`) |")
    if "before" in r:
        lines.append(row(f"no-op pass by the reconciler of `{r['before']['revision']}`",
                         r["before"]["noop_pass"],
                         "the same pass by that revision's code, same fleet, same run"))
    reapply, create = r.get("reapply_everything"), r.get("create_baseline")
    if create:
        lines.append(
            f"| baseline: `{create['tool']}` of the same objects into a new namespace, "
            f"every cluster in parallel | {create['seconds']} | | {create['objects']} | | | "
            f"| | {create['load']} | {create['per_minute_per_cluster']} objects/min per "
            "cluster |")
    lines += [
        row("**no-op pass, now**", noop, "target <= 10 s at 1,000 apps, 0 writes"),
        row("no-op pass, now, again", r["noop_pass_again"], ""),
    ]
    if reapply:
        lines += [
            f"| baseline: every object server-side applied again, `{reapply['tool']}` of "
            f"each cluster's compiled tree, in parallel | {reapply['seconds']} | | "
            f"{reapply['objects']} | | | | | {reapply['load']} | |",
            row("no-op pass, now, after that re-apply", r["noop_after_reapply"],
                "the re-apply's field manager now shares our fields; nothing to change")]
    else:
        lines.append("| baseline: every object server-side applied again | | | | | | | | "
                     "| not measured in this run (`--no-reapply`) |")
    for name, label in (("lists_raw", "consistent, as a pass asks"),
                        ("lists_raw_rv0", "`resourceVersion=0`: any age the watch cache has")):
        if name in r:
            raw = r[name]
            lines.append(
                f"| baseline: the same {raw['lists']} LISTs of the members, raw ({label}): "
                f"all at once, each body read, no parse | {raw['seconds']} | | | | | | "
                f"{raw['lists']} | {raw['load']} | {raw['mb']} MB; slowest LIST "
                f"{raw['slowest']} s |")
    lines += ["", *breakdown_lines(r)]
    host = noop["writes"].get("host", 0)
    met = noop["seconds"] <= 10 and noop["member_writes"] == 0
    lines += ["", f"Target (a no-op pass: <= 10 s and no object written, set for 1,000 "
              f"apps): **{'met' if met else 'not met'}** here at {r['apps']} apps: "
              f"{noop['seconds']} s ({noop.get('cpu')} CPU s) at load {noop.get('load')}, "
              f"{noop['member_writes']} writes to members" + (
                  f"; the {host} writes to the host are app statuses that changed since the "
                  "pass before (pods becoming ready, HPAs getting metrics after the first "
                  "pass)." if host else ", 0 to the host.")]
    return lines


def breakdown_lines(r: dict[str, Any]) -> list[str]:
    """Where the no-op pass's wall time went, and what the machine was busy with."""
    noop = r["noop_pass"]
    steps = ", ".join(f"{k} {v:.1f}" for k, v in noop.get("steps", {}).items())
    lists = "; ".join(
        f"{n}: {v['mb']} MB, {v['objects']} objects, slowest LIST {v['slowest_request_s']} s "
        f"({v['top'][0][0]}), parse {v['parse_s']} s" for n, v in noop.get("listed", {}).items())
    out = [f"Where the no-op pass's {noop['seconds']} s went (wall seconds per step; the host "
           f"sync runs beside desired and read): {steps}. Not in it: compiling the specs, "
           f"{noop.get('compile_seconds', '?')} s (a one-shot `apply` does it first). "
           f"Its LISTs: {lists}."]
    if "idle_cpu" in r:
        busy = ", ".join(f"{k} {v}%" for k, v in r["idle_cpu"].items())
        out += ["", f"The fleet between passes (share of one core over 10 s, per program; "
                f"1-minute load {r.get('idle_load')}): {busy}."]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--apps", type=int, default=1000)
    parser.add_argument("--before", metavar="REV",
                        help="also time the no-op pass of the reconciler at git revision REV")
    parser.add_argument("--fleet", type=Path, metavar="DIR",
                        help="use the running fleet in DIR, which already holds these apps "
                             "(no first pass, no creation baseline; left running)")
    parser.add_argument("--no-reapply", action="store_true",
                        help="skip the re-apply baseline and the pass after it (at 1,000 "
                             "apps the re-apply alone takes minutes)")
    parser.add_argument("--results", action="store_true", help="write bench/RESULTS.md")
    parser.add_argument("--one-pass", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one_pass:  # a child of --before: one pass with this tree's reconciler
        print(json.dumps(run_pass(args.kubeconfig, args.root)))
        return 0
    out = measure(args.apps, args.before, args.fleet, reapply=not args.no_reapply)
    print(json.dumps(out, indent=2))
    if args.results:
        command = "python bench/reconcile_bench.py --apps " + str(args.apps) + (
            f" --before {args.before}" if args.before else "") + (
            f" --fleet {args.fleet}" if args.fleet else "") + (
            " --no-reapply" if args.no_reapply else "") + " --results"
        write_section(f"reconcile_bench apps={args.apps}",
                      f"reconcile_bench.py, {args.apps} apps", command, results_lines(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
