#!/usr/bin/env python3
"""pincompile side by side with helm and kustomize, same apps, same output, same run.

    python bench/peers.py --apps 200            # builds helm and kustomize once (go install)
    python bench/peers.py --apps 200 --results  # and writes its section of bench/RESULTS.md

Builds ``helm`` (v3.16.3) and ``kustomize`` (v5.5.0) with ``go install`` from the Go module
proxy into ``~/.cache/pincompile/peers`` (once, under a file lock; later runs reuse them),
generates N PinApps (the compile_bench platform: 6 clusters), compiles them with pincompile,
and expresses the same objects as users of the peers would keep them:

- helm: one chart whose template renders the objects of its values file, and one values
  file per app and cluster holding that app's objects in that cluster (the most favourable
  form for helm: no templating logic at all, only data to YAML);
- kustomize: one overlay per cluster (and one per app and cluster) listing the objects'
  files as resources.

It checks that every peer produces the same number of objects of the same kinds as
pincompile, then times, in the same run, ``helm template`` / ``kustomize build`` run once per
app and cluster (as one Argo CD Application each) and once per cluster (the form most
favourable to the peer; best of 3) against ``pincompile compile --no-cache`` (CLI wall, best
of 3) in both of its output forms: ``-o -``, one stream on stdout as the peers print theirs,
and ``-o OUT``, one file per object. Target: pincompile >= 3x faster than both. Prints
numbers; it is not a test.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compile_bench  # (the synthetic platform and apps)
from results import write_section

PEERS = {
    "helm": ("helm.sh/helm/v3/cmd/helm", "v3.16.3"),
    "kustomize": ("sigs.k8s.io/kustomize/kustomize/v5", "v5.5.0"),
}
CACHE = Path(os.environ.get("PINCOMPILE_CACHE", Path.home() / ".cache" / "pincompile")) / "peers"
CHART_TEMPLATE = "{{- range .Values.objects }}\n---\n{{ toYaml . }}\n{{- end }}\n"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- the peers' binaries -------------------------------------------------------------------

def peer_binary(name: str) -> tuple[Path, float | None]:
    """The peer's binary (built with ``go install`` into the cache when missing); and the
    build's wall time (None when it was already there)."""
    module, version = PEERS[name]
    target = CACHE / f"{name}-{version}"
    binary = target / name
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"{name}.lock", "w") as lock:
        if not binary.exists():
            log(f"{name} {version}: waiting for the build lock ...")
        fcntl.flock(lock, fcntl.LOCK_EX)
        if binary.exists():
            return binary, None
        if shutil.which("go") is None:
            sys.exit(f"{name} is not in {target} and there is no Go toolchain to build it")
        log(f"{name} {version}: go install {module}@{version} (once; several minutes) ...")
        start = time.perf_counter()
        env = {**os.environ, "GOBIN": str(target), "CGO_ENABLED": "0"}
        proc = subprocess.Popen(["go", "install", "-v", f"{module}@{version}"], env=env,
                                stderr=subprocess.PIPE, text=True)
        assert proc.stderr is not None
        built = 0
        for _line in proc.stderr:  # go install -v prints every package it builds
            built += 1
            if built % 50 == 0:
                log(f"  {name}: {built} packages built ({time.perf_counter() - start:.0f}s)")
        if proc.wait() != 0 or not binary.exists():
            sys.exit(f"go install {module}@{version} failed")
        took = time.perf_counter() - start
        log(f"{name} {version}: built in {took:.0f}s ({built} packages)")
        return binary, took


# --- the same apps for every tool ----------------------------------------------------------

def generate(root: Path, apps: int, seed: int) -> None:
    """The compile_bench platform and ``apps`` PinApps (one per file)."""
    rng = random.Random(seed)
    compile_bench.write_platform(root)
    for i in range(apps):
        project = rng.choices(compile_bench.APP_PROJECTS, compile_bench.APP_WEIGHTS)[0]
        text, _ = compile_bench._pin_app(rng, f"{project[:6]}-svc-{i:05d}", project, i)
        folder = root / "apps" / project
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{i:05d}.yaml").write_text(text)


def groups(out: Path) -> dict[tuple[str, str], list[Path]]:
    """pincompile's output files by (app, cluster); objects of no app are 'platform'."""
    found: dict[tuple[str, str], list[Path]] = {}
    for path in sorted(out.rglob("*.yaml")):
        obj = yaml.load(path.read_bytes(), Loader=yaml.CSafeLoader)
        labels = obj.get("metadata", {}).get("labels") or {}
        app = labels.get("pincompute.io/app") if "pincompute.io/tier" in labels else None
        cluster = path.relative_to(out).parts[0]
        found.setdefault((app or "platform", cluster), []).append(path)
    return found


def kinds_of(text: str) -> Counter[str]:
    return Counter(d["kind"] for d in yaml.load_all(text, Loader=yaml.CSafeLoader) if d)


def helm_inputs(work: Path, by_group: dict[tuple[str, str], list[Path]]
                ) -> tuple[Path, dict[tuple[str, str], Path], dict[str, Path]]:
    chart = work / "helm" / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: app\nversion: 1.0.0\n")
    (chart / "templates" / "objects.yaml").write_text(CHART_TEMPLATE)
    values: dict[tuple[str, str], Path] = {}
    per_cluster: dict[str, list[Any]] = {}
    for (app, cluster), paths in by_group.items():
        objs = [yaml.load(p.read_bytes(), Loader=yaml.CSafeLoader) for p in paths]
        path = work / "helm" / "values" / cluster / f"{app}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.dump({"objects": objs}, Dumper=yaml.CSafeDumper))
        values[(app, cluster)] = path
        per_cluster.setdefault(cluster, []).extend(objs)
    clusters = {}
    for cluster, objs in per_cluster.items():
        path = work / "helm" / "clusters" / f"{cluster}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.dump({"objects": objs}, Dumper=yaml.CSafeDumper))
        clusters[cluster] = path
    return chart, values, clusters


def kustomize_inputs(work: Path, out: Path, by_group: dict[tuple[str, str], list[Path]]
                     ) -> tuple[dict[tuple[str, str], Path], dict[str, Path]]:
    base = work / "kustomize"
    per_app: dict[tuple[str, str], Path] = {}
    per_cluster: dict[str, list[str]] = {}
    for (app, cluster), paths in by_group.items():
        folder = base / "apps" / cluster / app
        folder.mkdir(parents=True)
        names = []
        for p in paths:
            name = "--".join(p.relative_to(out).parts[1:])  # <namespace>--<kind>-<name>.yaml
            shutil.copy(p, folder / name)
            names.append(name)
            per_cluster.setdefault(cluster, []).append(f"{app}/{name}")
        (folder / "kustomization.yaml").write_text(
            "resources:\n" + "".join(f"- {n}\n" for n in names))
        per_app[(app, cluster)] = folder
    clusters = {}
    for cluster, files in per_cluster.items():
        folder = base / "apps" / cluster
        (folder / "kustomization.yaml").write_text(
            "resources:\n" + "".join(f"- {f}\n" for f in files))
        clusters[cluster] = folder
    return per_app, clusters


def timed(commands: list[list[str]]) -> tuple[float, Counter[str]]:
    """Run every command one after the other; total wall time and the kinds printed."""
    kinds: Counter[str] = Counter()
    outputs = []
    start = time.perf_counter()
    for cmd in commands:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            sys.exit(f"{' '.join(cmd[:3])} ... failed:\n{proc.stderr[-2000:]}")
        outputs.append(proc.stdout)
    took = time.perf_counter() - start
    for text in outputs:
        kinds.update(kinds_of(text))
    return took, kinds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", type=int, default=200, help="PinApps to generate")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--results", action="store_true",
                        help="also write this run's section of bench/RESULTS.md")
    args = parser.parse_args()

    helm, helm_build = peer_binary("helm")
    kustomize, kustomize_build = peer_binary("kustomize")
    compile_bench.byte_compile()
    work = Path(tempfile.mkdtemp(prefix="peers-bench-"))
    try:
        root = work / "repo"
        generate(root, args.apps, args.seed)
        log(f"generated {args.apps} PinApps: {root}")
        pincompile = [*compile_bench._pincompile(), "compile", str(root), "-q", "--no-cache",
                      "--revision", compile_bench.REVISION]
        probe = compile_bench.file_creation_us(work / "probe")
        log(f"file creation: {probe:.0f} us per file")
        files_took = []
        for run in range(3):  # each into a directory of its own (file_creation_us)
            out = work / f"out-{run}"
            files_took.append(timed([[*pincompile, "--out-dir", str(out)]])[0])
        stream, stream_kinds = min(timed([[*pincompile, "--out-dir", "-"]]) for _ in range(3))
        files = min(files_took)
        by_group = groups(out)
        expected: Counter[str] = Counter()
        for paths in by_group.values():
            for p in paths:
                expected.update(kinds_of(p.read_text()))
        if stream_kinds != expected:
            sys.exit(f"compile -o - printed other objects than -o OUT wrote: {stream_kinds}")
        log(f"pincompile compile: -o - {stream:.2f}s, -o OUT {files:.2f}s; "
            f"{sum(expected.values())} objects in {len(by_group)} (app, cluster) groups")
        chart, values, helm_clusters = helm_inputs(work, by_group)
        k_apps, k_clusters = kustomize_inputs(work, out, by_group)
        runs: dict[str, float] = {}
        for label, commands, repeat in [
            ("helm, per app and cluster",
             [[str(helm), "template", app, str(chart), "-f", str(v)]
              for (app, _), v in sorted(values.items())], 1),
            ("helm, per cluster",
             [[str(helm), "template", c, str(chart), "-f", str(v)]
              for c, v in sorted(helm_clusters.items())], 3),
            ("kustomize, per app and cluster",
             [[str(kustomize), "build", str(f)] for _, f in sorted(k_apps.items())], 1),
            ("kustomize, per cluster",
             [[str(kustomize), "build", str(f)] for _, f in sorted(k_clusters.items())], 3),
        ]:
            log(f"{label}: {len(commands)} runs, best of {repeat} ...")
            took, kinds = min(timed(commands) for _ in range(repeat))
            if kinds != expected:
                sys.exit(f"{label} produced other objects: {dict(kinds)} vs {dict(expected)}")
            runs[label] = took
            log(f"  {took:.2f}s ({took / stream:.1f}x pincompile -o -)")
    finally:
        shutil.rmtree(work, ignore_errors=True)

    lines = [
        f"{args.apps} PinApps -> {sum(expected.values())} objects for 6 clusters "
        f"({len(by_group)} app-and-cluster groups); {compile_bench._machine()}; load average "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}; creating a file {probe:.0f} us "
        f"(probe); {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        "",
        "Kinds: " + ", ".join(f"{k} {n}" for k, n in sorted(expected.items())) + ".",
        "",
        "| measured | seconds | peer / `compile -o -` | peer / `compile -o OUT` |",
        "|---|---:|---:|---:|",
        f"| **`pincompile compile --no-cache -o -`** (one stream, as the peers print), CLI "
        f"wall | **{stream:.2f}** | | |",
        f"| **`pincompile compile --no-cache -o OUT`** (a file per object), CLI wall | "
        f"**{files:.2f}** | | |",
        *(f"| `{label.split(',')[0]} {'template' if 'helm' in label else 'build'}`, "
          f"{label.split(', ')[1]} | {t:.2f} | {t / stream:.2f}x | {t / files:.2f}x |"
          for label, t in runs.items()),
        "",
        f"Target: pincompile >= 3x faster than both. Builds: helm {PEERS['helm'][1]} "
        f"{'cached' if helm_build is None else f'{helm_build:.0f}s'}, kustomize "
        f"{PEERS['kustomize'][1]} "
        f"{'cached' if kustomize_build is None else f'{kustomize_build:.0f}s'} "
        "(`go install`, into ~/.cache/pincompile/peers).",
    ]
    print("\n".join(lines))
    if args.results:
        write_results(args.apps, lines)
    return 0


def write_results(apps: int, lines: list[str]) -> None:
    write_section(f"peers apps={apps}", f"peers.py, {apps} PinApps",
                  f"python bench/peers.py --apps {apps} --results", lines)

if __name__ == "__main__":
    sys.exit(main())
