#!/usr/bin/env python3
"""Push-to-applied latency of ``pincompile serve`` for one changed app, on a local fleet.

    python bench/serve_latency.py                 # 5 pushes, serve's default --coalesce 1s
    python bench/serve_latency.py --rounds 10 --coalesce 0.2s --results

Starts a fleet of its own (three zonal member clusters and a host: the reconciler's test
fixture), a bare git repository of the fixture's specs, and ``pincompile serve`` (the real
reconciler, leader election on) as a child process; ``serve_profile_runner.py`` wraps the
reconciler's steps with timers to say where the time goes (host sync, read, plan, apply).
After serve's first pass, each round commits a new image for the ``api`` app (a Deployment
in two clusters), pushes it, sends the signed webhook and measures the time from the
webhook's 202 to the moment a watch sees the Deployment with the new image in **every**
target cluster. Target: under 5 s. With ``--apps N`` the repository is
``reconcile_bench.py``'s N generated apps instead (3 member clusters each) and the changed
app is ``bench/app-00001``; ``--fleet DIR`` uses the running fleet in DIR (say, one that
already holds those apps, so serve's first pass has little to do) and leaves it running.

Baseline, measured in the same run on the same fleet: the same changed Deployment written
straight to both clusters by server-side apply requests in parallel (what ``kubectl apply
--server-side`` of an already compiled manifest does; no fetch, compile or plan), timed the
same way, from the first request to the watch seeing it everywhere.

Prints numbers; it is not a test. Takes its fleet down again. serve's log, the per-pass
profile (step spans, dry-runs, sampled functions) and the report are kept in
``bench/out/serve_latency-<time>/`` (printed; not in git); after each round the pass's step
timings (serve's ``pass ... steps`` log line), its dry-runs and its most sampled functions
are printed, with serve's other log lines since the previous round.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests" / "reconciler" / "serve"), str(REPO / "bench")]

from results import write_section  # noqa: E402

from pincompile.compiler import compile_path  # noqa: E402
from reconciler.clients import write  # noqa: E402
from reconciler.clients.connect import Connection  # noqa: E402
from reconciler.fleet import build  # noqa: E402
from reconciler.fleet import fleet as fleet_mod  # noqa: E402
from reconciler.serve.webhooks import GENERIC_SIGNATURE_HEADER, sign  # noqa: E402
from tests.support.serve import ImageWatch, ServeProcess, SpecRepo, http, serve_status, wait_for  # noqa: E402

FIXTURE = REPO / "tests" / "reconciler" / "fixtures" / "repo"
SECRET = "bench-secret"


@dataclass(frozen=True)
class Target:
    """The app each round changes: its spec file, Deployment and clusters."""

    specs: Path
    spec: str = "apps/shop/api.yaml"
    namespace: str = "shop"
    name: str = "api"
    clusters: tuple[str, ...] = ("rt-b", "rt-c")

    def spec_with(self, image: str) -> dict[str, str]:
        text = (self.specs / self.spec).read_text()
        return {self.spec: re.sub(r"(image: )\S+", rf"\g<1>{image}", text, count=1)}


def target_for(apps: int, tmp: Path) -> Target:
    """The fixture's ``api`` app, or app-00001 of ``apps`` generated apps."""
    if not apps:
        return Target(FIXTURE)
    from reconcile_bench import generate

    generate(tmp / "specs", apps)
    return Target(tmp / "specs", "apps/bench/app-00001.yaml", "bench", "app-00001",
                  ("rt-a", "rt-b", "rt-c"))


def push_hook(base: str, sha: str) -> tuple[float, float]:
    """The monotonic and wall-clock instants serve answered 202."""
    body = json.dumps({"ref": "refs/heads/main", "after": sha}).encode()
    status, answer = http("POST", f"{base}/webhooks/generic", body,
                          {"Content-Type": "application/json",
                           GENERIC_SIGNATURE_HEADER: sign(SECRET.encode(), body)})
    if status != 202:
        raise SystemExit(f"webhook refused: {status} {answer!r}")
    return time.monotonic(), time.time()


def explain(serve: ServeProcess, seen: int, title: str, span: dict[str, Any] | None) -> int:
    """Print serve's log lines after the first ``seen`` (the pass's step timings among them)
    and the profile of the pass; returns how many lines the log has now."""
    lines = serve.log.read_text().splitlines()
    noise = ("Connection pool is full",)
    print(f"--- {title}", file=sys.stderr)
    for line in [x for x in lines[seen:] if not any(n in x for n in noise)][-40:]:
        print(f"  log: {line[:400]}", file=sys.stderr)
    if span is not None:
        print(f"  dry-runs: {span.get('dry_runs')}", file=sys.stderr)
        for where, seconds in span.get("sampled", [])[:12]:
            print(f"  sampled {seconds:7.2f} s  {where}", file=sys.stderr)
    return len(lines)


def pass_steps(log: Path, sha: str) -> dict[str, float]:
    """The step timings serve logged for the pass of ``sha``."""
    found = re.findall(rf"pass {sha[:12]} steps \(s\): (.*)", log.read_text())
    if not found:
        return {}
    return {name: float(value) for name, value in
            (part.rsplit(" ", 1) for part in found[-1].split(", ") if " " in part)}


def serve_round(api: Any, repo: SpecRepo, serve: ServeProcess, target: Target, image: str,
                profile: Path) -> dict[str, Any]:
    seen = len(serve.log.read_text().splitlines())
    watch = ImageWatch(api, image, target.clusters, target.namespace, target.name)
    try:
        sha = repo.commit(f"{target.name}: {image}", files=target.spec_with(image))
        accepted, wall = push_hook(serve.base, sha)
        done = wait_for(watch.everywhere, timeout=300, what=f"{image} everywhere")
    finally:
        watch.stop()
    state = wait_for(lambda: (s := serve_status(serve.base))["lastApplied"]["revision"] == sha
                     and not s["busy"] and s, timeout=300, what="the pass finished")
    last = state["lastPass"]
    spans = [json.loads(line) for line in profile.read_text().splitlines()]
    span = next(x for x in reversed(spans) if x["revision"] == sha)
    # where the time to the write went: each step's end, relative to the 202
    steps = {"to pass start (coalesce, fetch, compile)": span["run"][0] - wall}
    previous = span["run"][0]
    for step, ends in (("host sync and read (in parallel)", ("host_sync", "read")),
                       ("plan", ("plan",)), ("apply", ("apply",))):
        end = max(span[e][1] for e in ends)
        steps[step] = end - previous
        previous = end
    latency = done - accepted
    explain(serve, seen, f"round {image}: push-to-applied {latency:.2f} s, pass "
            f"{last['seconds']:.2f} s, load {os.getloadavg()[0]:.1f}", span)
    return {"latency": latency, "pass_seconds": last["seconds"],
            "pass_steps": pass_steps(serve.log, sha), "dry_runs": span.get("dry_runs"),
            "load": round(os.getloadavg()[0], 1),
            "pass_end_after_push": last["push_to_applied_seconds"], "steps": steps}


def baseline_round(api: Any, kubeconfig: str, root: Path, target: Target, image: str) -> float:
    """The changed Deployment, compiled beforehand, written by one SSA per cluster."""
    for name, text in target.spec_with(image).items():
        (root / name).write_text(text)
    result = compile_path(root, revision="baseline")
    objs = {m.cluster: m.obj for m in result.manifests
            if m.obj["kind"] == "Deployment" and m.obj["metadata"]["name"] == target.name}
    conns = {c: Connection(c, c, kubeconfig) for c in target.clusters}
    for conn in conns.values():  # discovery is warm in a real client too
        conn.resource("apps/v1", "Deployment")
    watch = ImageWatch(api, image, target.clusters, target.namespace, target.name)
    try:
        started = time.monotonic()
        with ThreadPoolExecutor(len(target.clusters)) as pool:
            list(pool.map(lambda c: write.apply(conns[c], objs[c]), target.clusters))
        done = wait_for(watch.everywhere, timeout=120, what=f"{image} everywhere (baseline)")
    finally:
        watch.stop()
        for conn in conns.values():
            conn.close()
    return float(done - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--coalesce", default="1s", help="serve's --coalesce (default 1s)")
    parser.add_argument("--apps", type=int, default=0,
                        help="reconcile_bench.py's N generated apps instead of the fixture")
    parser.add_argument("--fleet", type=Path, metavar="DIR",
                        help="use the running fleet in DIR (left running)")
    parser.add_argument("--results", action="store_true",
                        help="also write this run's section of bench/RESULTS.md")
    args = parser.parse_args()
    build.ensure_binaries(echo=lambda m: print(m, file=sys.stderr))
    from kubernetes import config

    with tempfile.TemporaryDirectory() as tmp:
        target = target_for(args.apps, Path(tmp))
        directory = args.fleet or build.cache_root() / f"fleet-bench-serve-{os.getpid()}"
        state = fleet_mod.up(target.specs / "platform", directory,
                             echo=lambda m: print(m, file=sys.stderr))
        serve: ServeProcess | None = None
        clients: dict[str, Any] = {}

        def api(context: str) -> Any:
            if context not in clients:
                clients[context] = config.new_client_from_config(
                    config_file=str(state.kubeconfig), context=context)
            return clients[context]

        out = REPO / "bench" / "out" / time.strftime("serve_latency-%Y%m%d-%H%M%S")
        out.mkdir(parents=True, exist_ok=True)
        print(f"serve's log, the pass profile and the report: {out}", file=sys.stderr)
        try:
            repo = SpecRepo(Path(tmp) / "repo", specs=target.specs)
            profile = out / "profile.jsonl"
            serve = ServeProcess(
                repo.bare, out / "serve.jsonl", "--kubeconfig", str(state.kubeconfig),
                "--coalesce", args.coalesce, "--lease-duration", "8s", "--renew-deadline",
                "5s", "--retry-period", "1s", "--runner", "serve_profile_runner:factory",
                identity="bench", real=True,
                env={"PINCOMPILE_WEBHOOK_SECRET": SECRET, "KUBECONFIG": str(state.kubeconfig),
                     "SERVE_PROFILE": str(profile), "PYTHONPATH": os.pathsep.join(
                         [str(REPO / "bench"), str(REPO / "tests" / "reconciler" / "serve")])})
            objects = len(compile_path(target.specs, revision="count").manifests)
            first = time.monotonic()
            wait_for(lambda: serve_status(serve.base)["lastApplied"], timeout=3600,  # type: ignore[union-attr]
                     what="serve's first pass")
            first_pass = time.monotonic() - first
            spans = [json.loads(line) for line in profile.read_text().splitlines()]
            explain(serve, 0, f"serve's first pass: {first_pass:.1f} s",
                    spans[0] if spans else None)
            rounds = [serve_round(api, repo, serve, target, f"registry.internal/x/y:3.0.{i}",
                                  profile) for i in range(args.rounds)]
            serve.stop()
            base = [baseline_round(api, str(state.kubeconfig), repo.work, target,
                                   f"registry.internal/x/y:4.0.{i}")
                    for i in range(args.rounds)]
        finally:
            if serve is not None:
                serve.stop()
            for c in clients.values():
                c.close()
            if args.fleet is None:
                fleet_mod.down(directory, echo=lambda _m: None)
                shutil.rmtree(directory, ignore_errors=True)
    latencies = [r["latency"] for r in rounds]
    report = {
        "rounds": args.rounds, "coalesce": args.coalesce, "clusters": list(target.clusters),
        "apps": args.apps, "objects": objects, "first_pass_seconds": round(first_pass, 1),
        "loads": [r["load"] for r in rounds],
        "latency_median": statistics.median(latencies), "latency_max": max(latencies),
        "latency_all": [round(x, 2) for x in latencies],
        "pass_steps": [r["pass_steps"] for r in rounds],
        "dry_runs": [r["dry_runs"] for r in rounds],
        "pass_seconds_median": statistics.median(r["pass_seconds"] for r in rounds),
        "pass_end_after_push_median": statistics.median(r["pass_end_after_push"]
                                                        for r in rounds),
        "steps_median": {k: statistics.median(r["steps"][k] for r in rounds)
                         for k in rounds[0]["steps"]},
        "baseline_median": statistics.median(base), "baseline_all": [round(x, 3) for x in base],
        "loadavg": os.getloadavg(), "machine": f"{platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} CPUs", "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    report["ratio"] = report["latency_median"] / report["baseline_median"]
    print(json.dumps(report, indent=2))
    (out / "report.json").write_text(json.dumps(report, indent=2))
    print("\n".join(table(report)))
    if args.results:
        write_results(report)
    return 0


def table(r: dict[str, Any]) -> list[str]:
    repo = (f"reconcile_bench.py's {r['apps']} apps" if r.get("apps") else
            "the reconciler's fixture repository")
    return [
        f"One changed app (a Deployment in {len(r['clusters'])} member clusters) of "
        f"{repo} ({r['objects']} objects), {r['rounds']} pushes, serve `--coalesce "
        f"{r['coalesce']}`; serve's first pass {r['first_pass_seconds']} s; {r['machine']}; "
        f"1-minute load average after each round {r['loads']}, after the run "
        f"{' '.join(f'{x:.1f}' for x in r['loadavg'])}; {r['date']}.",
        "",
        "| measured | median s | all / note |",
        "|---|---:|---|",
        f"| **push-to-applied**: webhook 202 -> new image in every target cluster (watch) | "
        f"**{r['latency_median']:.2f}** | {r['latency_all']}; max {r['latency_max']:.2f}; "
        "target < 5 s |",
        f"| baseline: SSA of the compiled Deployment to every target cluster -> seen "
        f"everywhere | "
        f"{r['baseline_median']:.3f} | {r['baseline_all']} |",
        f"| **ratio** push-to-applied / baseline | **{r['ratio']:.0f}x** | the rest is the "
        f"coalesce wait ({r['coalesce']}), fetch, compile, host sync and plan |",
        *[f"| ... of which {step} | {took:.2f} | |" for step, took in r["steps_median"].items()],
        f"| serve's pass, start to end (incl. waiting for the rollout to be healthy) | "
        f"{r['pass_seconds_median']:.2f} | |",
        f"| webhook -> end of that pass (`push_to_applied_seconds` in /status) | "
        f"{r['pass_end_after_push_median']:.2f} | |",
        *[f"| round {i}: serve's logged steps (`lastPass.steps`); dry-runs | "
          f"{latency:.2f} | {steps_text(steps)}; dry-runs {dict(dry_runs or {}) or 0} |"
          for i, (latency, steps, dry_runs) in enumerate(zip(
              r["latency_all"], r.get("pass_steps", []), r.get("dry_runs", []),
              strict=False), start=1)],
        "",
        f"Target (push-to-applied < 5 s, set for 1,000 apps): "
        f"**{'met' if r['latency_max'] < 5 else 'not met'}** here"
        + (f" at {r['apps']} apps" if r.get("apps") else "") +
        f" (median {r['latency_median']:.2f} s, max {r['latency_max']:.2f} s).",
    ]


def steps_text(steps: dict[str, float]) -> str:
    """The steps that took 0.05 s or more, as ``name 1.23``."""
    return ", ".join(f"{k} {v:.2f}" for k, v in steps.items() if v >= 0.05) or "-"


def write_results(r: dict[str, Any]) -> None:
    """Replace (or add) this bench's section in bench/RESULTS.md."""
    apps = r.get("apps") or 0
    option = f" --apps {apps}" if apps else ""
    write_section("serve_latency" + (f" apps={apps}" if apps else ""),
                  "serve_latency.py, push-to-applied" + (f", {apps} apps" if apps else ""),
                  f"python bench/serve_latency.py{option} --rounds {r['rounds']} "
                  f"--coalesce {r['coalesce']} --results", table(r))

if __name__ == "__main__":
    sys.exit(main())
