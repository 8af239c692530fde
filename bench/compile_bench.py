#!/usr/bin/env python3
"""Compile a synthetic repository and compare with the floor: libyaml + C json, same run.

    python bench/compile_bench.py --apps 1000          # quick: a few minutes on 2 cores
    python bench/compile_bench.py                      # 10,000 apps
    python bench/compile_bench.py --apps 1000 --json   # machine-readable

Generates a spec repository (the platform of examples/platform with its 6 member clusters,
capacities and project quotas scaled up so that everything fits, and N apps over the example
projects, one app per file under apps/<project>/), then measures, each in a fresh Python
process (so peak RSS is per phase and no cache is warm from an earlier phase):

  floor        what the field can do with the same data: parse every input file with
               PyYAML's libyaml ``CSafeLoader`` + serialize every generated object (and the
               placement data) with C ``json.dumps``; the objects come from an untimed
               compile in between
  compile      the stages of ``pipeline.run`` called one by one (load, parse, check, place,
               expand), then ``render_files`` (serialize, with placement.json) and
               ``write_tree``: the work of a compile, stage by stage, in one process
  cli          ``pincompile compile REPO --out-dir OUT -q --no-cache`` as a subprocess: the same
               work plus interpreter start-up and imports, with expand, serialize and
               write streamed per workload in one process per CPU; and again with ``-j 1``;
               and ``-o -``, every object in one stream (as the floor serializes them:
               no file per object)
  incremental  ``pincompile compile`` with a warm cache after one app's replicas changed

pincompile's modules are byte-compiled first (as ``pip install`` does): a CLI run then
measures what an installed pincompile does, also where PYTHONDONTWRITEBYTECODE is set.

Reports ``compile / floor`` and ``CLI / floor`` (target: <= 2x), the incremental CLI wall
time (target: < 1 s) and peak RSS. Prints numbers; it is not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from results import write_section

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "platform"
CLUSTERS = 6
CAPACITY_SCALE = 1000
"""Example cluster capacities are sized for a local fake fleet; scaled so 10,000 apps fit."""
PROJECTS = {
    # name: (namespace, placement, policy) as in examples/platform/projects
    "search": ("search", "{regions: [us-east-1]}", False),
    "ads": ("ads", None, False),
    "ml": ("ml", "{regions: [us-east-1]}", False),
    "platform-system": ("pincompute-system", None, True),
}
APP_PROJECTS = ["search", "ads", "ml", "platform-system"]
APP_WEIGHTS = [40, 35, 20, 5]
REVISION = "bench"


# --- the synthetic repository ------------------------------------------------------------

def write_platform(root: Path) -> None:
    """Clusters, runtime and sidecars of examples/platform; projects with huge quotas."""
    platform = root / "platform"
    shutil.copytree(EXAMPLES / "sidecars", platform / "sidecars")
    shutil.copy(EXAMPLES / "runtime.yaml", platform / "runtime.yaml")
    (platform / "clusters").mkdir(parents=True)
    count = 0
    for src in sorted((EXAMPLES / "clusters").glob("*.yaml")):
        text = src.read_text()
        count += len(re.findall(r"^kind: Cluster$", text, re.M))
        (platform / "clusters" / src.name).write_text(
            re.sub(r"(reservedCapacity|capacity): \{(.*?)\}", _scale_capacity, text))
    if count != CLUSTERS:
        sys.exit(f"examples/platform has {count} clusters, this bench expects {CLUSTERS}")
    (platform / "projects").mkdir()
    for name, (namespace, placement, system) in PROJECTS.items():
        quota = '{cpu: "1000000", memory: 4000Ti}'
        lines = [
            "apiVersion: pincompute.io/v1", "kind: Project", f"metadata: {{name: {name}}}",
            "spec:", f"  namespace: {namespace}", f"  owners: [team-{name}]", "  quota:",
            f"    reserved: {quota}", f"    ondemand: {quota}", f"    preemptible: {quota}",
        ]
        if placement:
            lines.append(f"  placement: {placement}")
        lines.append(f"  policy: {{allowHostNetwork: {str(system).lower()}, "
                     f"allowPrivileged: false, allowDaemons: {str(system).lower()}}}")
        (platform / "projects" / f"{name}.yaml").write_text("\n".join(lines) + "\n")


def _scale_capacity(match: re.Match[str]) -> str:
    """``capacity: {...}`` or ``reservedCapacity: {...}`` with every count but GPUs scaled."""
    parts = []
    for item in match.group(2).split(","):
        key, value = (s.strip() for s in item.split(":", 1))
        number = re.fullmatch(r'"?(\d+)(\w*)"?', value)
        if number and key != "nvidia.com/gpu":
            value = f'"{int(number.group(1)) * CAPACITY_SCALE}{number.group(2)}"'
        parts.append(f"{key}: {value}")
    return match.group(1) + ": {" + ", ".join(parts) + "}"


def _container(rng: random.Random, name: str, project: str, port: bool) -> list[str]:
    cpu = rng.choice(["100m", "250m", "500m", "1", "2"])
    mem = rng.choice(["256Mi", "512Mi", "1Gi", "2Gi", "4Gi"])
    lines = [
        f"      - name: {name}",
        f"        image: registry.internal/{project}/{name}:"
        f"1.{rng.randrange(40)}.{rng.randrange(9)}",
        f'        args: ["--port=8080", "--log-level={rng.choice(["info", "warn"])}"]',
        "        env:",
        f"          - {{name: MAX_CONNECTIONS, value: \"{rng.randrange(10, 500)}\"}}",
    ]
    if rng.random() < 0.3:
        lines.append(f"          - {{name: DB_PASSWORD, secretRef: {{name: {name}-db, "
                     "key: password}}")
    if port:
        lines += ["        ports: [{name: http, containerPort: 8080}]",
                  f"        resources: {{cpu: {cpu}, memory: {mem}}}",
                  "        probes:",
                  "          readiness: {http: /ready, port: 8080}",
                  "          liveness: {http: /healthz, port: 8080}"]
    else:
        lines.append(f"        resources: {{cpu: {cpu}, memory: {mem}}}")
    return lines


def _pin_app(rng: random.Random, name: str, project: str, i: int) -> tuple[str, int]:
    replicas = rng.randint(2, 30)
    tier = rng.choice(["reserved", "ondemand", "ondemand", "preemptible"])
    spread = rng.choice(["zone", "zone", "cluster", "none"])
    lines = [
        "apiVersion: pincompute.io/v1", "kind: PinApp", "metadata:", f"  name: {name}",
        f"  project: {project}", f"  labels: {{team: {project}-team-{i % 17}}}", "spec:",
        f"  replicas: {replicas}", f"  tier: {tier}", "  placement:",
        f"    spread: {spread}", f"    maxClusters: {rng.choice([2, 3, 3])}",
    ]
    if rng.random() < 0.5:
        lines.append("    clusterLabels: {pool: general}")
    lines += ["  template:", "    containers:", *_container(rng, "main", project, True)]
    if rng.random() < 0.3:
        lines.append("    sidecars: [logging]")
    lines.append("    network: routable")
    if rng.random() < 0.4:
        lines += ["    config:", "      app.yaml: |", "        server:",
                  "          port: 8080", f"        cache_mb: {rng.randrange(64, 4096)}",
                  f"        feature_flags: [a{i % 7}, b{i % 11}]"]
    lines += ["  rollout: {strategy: zone-by-zone, maxSurge: 25%, maxUnavailable: 0, "
              "healthTimeout: 10m}",
              "  service:", "    ports: [{name: http, port: 80, targetPort: 8080}]"]
    if rng.random() < 0.3:
        lines.append(f"    ingress: {{host: {name}.internal}}")
    lines.append("  disruptionBudget: {maxUnavailable: 1}")
    if rng.random() < 0.3:
        low = rng.randint(1, replicas)
        high = rng.randint(replicas, 60)
        lines += ["---", "apiVersion: pincompute.io/v1", "kind: PinScaler", "metadata:",
                  f"  name: {name}", f"  project: {project}", "spec:", f"  target: {name}",
                  f"  minReplicas: {low}", f"  maxReplicas: {high}", "  metrics:",
                  f"    - {{type: cpu, targetUtilization: {rng.randrange(50, 80)}}}",
                  "  cooldown: {scaleUp: 60s, scaleDown: 5m}"]
    return "\n".join(lines) + "\n", replicas


def _jobset(rng: random.Random, name: str, project: str) -> str:
    completions = rng.randint(10, 500)
    lines = [
        "apiVersion: pincompute.io/v1", "kind: PinterestJobSet", "metadata:",
        f"  name: {name}", f"  project: {project}", "spec:",
        f"  completions: {completions}", f"  parallelism: {rng.randint(1, 20)}",
        "  backoffLimitPerShard: 3", "  ttlAfterFinished: 1h", "  tier: preemptible",
        f"  placement: {{clusterLabels: {{pool: general}}, divide: {rng.random() < 0.5}}}"
        .replace("True", "true").replace("False", "false"),
        "  template:", "    containers:", *_container(rng, "worker", project, False),
        "  configTemplates:", "    job.conf: |", "      shard_count={{ job.completions }}",
        "      first_shard_here={{ job.indexOffset }}",
    ]
    return "\n".join(lines) + "\n"


def _cron(rng: random.Random, name: str, project: str) -> str:
    lines = [
        "apiVersion: pincompute.io/v1", "kind: PinterestCronJob", "metadata:",
        f"  name: {name}", f"  project: {project}", "spec:",
        f'  schedule: "{rng.randrange(60)} */{rng.choice([1, 2, 6])} * * *"',
        "  timezone: Etc/UTC", "  concurrencyPolicy: Forbid", "  tier: ondemand",
        "  placement: {clusterLabels: {pool: general}}",
        "  template:", "    containers:", *_container(rng, "main", project, False),
    ]
    if rng.random() < 0.5:
        lines.append("    sidecars: [logging]")
    return "\n".join(lines) + "\n"


def _pin_pod(rng: random.Random, name: str, project: str) -> str:
    lines = [
        "apiVersion: pincompute.io/v1", "kind: PinPod", "metadata:", f"  name: {name}",
        f"  project: {project}", "spec:", "  tier: ondemand", "  restartPolicy: Always",
        "  failover: true", "  containers:",
        *(line[2:] for line in _container(rng, "main", project, True)),
        "  volumes:", "    - {name: scratch, type: emptyDir, mountPath: /scratch, size: 10Gi}",
    ]
    return "\n".join(lines) + "\n"


def generate(root: Path, apps: int, seed: int) -> dict[str, int]:
    """Write the repository; return how many specs of each kind it holds."""
    rng = random.Random(seed)
    write_platform(root)
    counts: dict[str, int] = {}
    for i in range(apps):
        project = rng.choices(APP_PROJECTS, APP_WEIGHTS)[0]
        roll = rng.random()
        if roll < 0.80:
            kind = "PinApp"
            text, _ = _pin_app(rng, f"{project[:6]}-svc-{i:05d}", project, i)
            if "kind: PinScaler" in text:
                counts["PinScaler"] = counts.get("PinScaler", 0) + 1
        elif roll < 0.88:
            kind, text = "PinterestJobSet", _jobset(rng, f"{project[:6]}-job-{i:05d}", project)
        elif roll < 0.95:
            kind, text = "PinterestCronJob", _cron(rng, f"{project[:6]}-cron-{i:05d}", project)
        else:
            kind, text = "PinPod", _pin_pod(rng, f"{project[:6]}-pod-{i:05d}", project)
        counts[kind] = counts.get(kind, 0) + 1
        folder = root / "apps" / project
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{i:05d}.yaml").write_text(text)
    return counts


def change_one_app(root: Path) -> str:
    """Change the replicas of the first PinApp (by file name) that no PinScaler bounds, by
    one (odd n -> n + 1, even n -> n - 1: called again, it changes them back); return its
    file."""
    for path in sorted((root / "apps").rglob("*.yaml")):
        text = path.read_text()
        if "kind: PinApp" in text and "kind: PinScaler" not in text:
            new = re.sub(r"^  replicas: (\d+)$",
                         lambda m: f"  replicas: {int(m[1]) + (1 if int(m[1]) % 2 else -1)}",
                         text, count=1, flags=re.M)
            path.write_text(new)
            return path.relative_to(root).as_posix()
    raise SystemExit("no PinApp to change")


# --- phases, each run in a fresh process ---------------------------------------------------

def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def phase_floor(root: Path) -> dict[str, Any]:
    """libyaml parse of every input + C json.dumps of every output object (same data)."""
    import yaml

    from pincompile.pipeline import run
    from pincompile.source.loader import load_tree

    rss_imports = _rss_mib()
    paths = sorted(root.rglob("*.yaml"))
    start = time.perf_counter()
    docs = 0
    for path in paths:
        docs += len(list(yaml.load_all(path.read_bytes(), Loader=yaml.CSafeLoader)))
    t_load = time.perf_counter() - start
    result = run(load_tree(root), revision=REVISION)  # untimed: what to serialize
    objs: list[Any] = [m.obj for m in result.manifests]
    if result.plan is not None:
        objs.append(result.plan.to_json())
    start = time.perf_counter()
    texts = [json.dumps(obj, sort_keys=True) for obj in objs]
    t_ser = time.perf_counter() - start
    return {"load": t_load, "serialize": t_ser, "floor": t_load + t_ser, "documents": docs,
            "objects": len(texts), "bytes": sum(len(t) for t in texts),
            "rss_imports_mib": rss_imports, "rss_peak_mib": _rss_mib()}


def phase_compile(root: Path, out: Path) -> dict[str, Any]:
    """``pipeline.run`` stage by stage, then what ``pincompile compile`` does with it."""
    from pincompile.checks import check
    from pincompile.diagnostics import add_new
    from pincompile.emit.output import render_files, write_tree
    from pincompile.expand import expand_all
    from pincompile.parse import parse
    from pincompile.pipeline import Result
    from pincompile.placement import plan as place
    from pincompile.source.loader import load_tree

    rss_imports = _rss_mib()
    stages: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        stages[name] = now - clock
        clock = now

    loaded = load_tree(root)
    lap("load")
    catalog, diagnostics = parse(loaded)
    result = Result(catalog=catalog, sources=loaded.sources, diagnostics=diagnostics)
    lap("parse")
    add_new(result.diagnostics, check(catalog))
    lap("check")
    plan, problems = place(catalog)
    result.plan = plan
    add_new(result.diagnostics, problems)
    lap("place")
    manifests, problems = expand_all(catalog, plan, revision=REVISION)
    result.manifests = manifests
    add_new(result.diagnostics, problems)
    result.diagnostics = sorted(set(result.diagnostics))
    lap("expand")
    if result.diagnostics:
        first = result.diagnostics[:5]
        raise SystemExit(f"the synthetic repository does not validate: {first}")
    files = render_files(manifests, "yaml", plan.to_json())
    lap("serialize")
    write_tree(out, files)
    lap("write")
    return {"stages": stages, "compile": sum(stages.values()), "objects": len(manifests),
            "specs": len(catalog.entries), "files": len(files),
            "bytes": sum(len(t) for t in files.values()),
            "rss_imports_mib": rss_imports, "rss_peak_mib": _rss_mib()}


def phase_serve(root: Path) -> dict[str, Any]:
    """A long-running process's recompile, as serve makes it after a push: one
    ``Compiler``, the next commit with one app changed."""
    import gc

    from pincompile.cli import GC_THRESHOLDS
    from pincompile.compiler import Compiler
    from pincompile.source.loader import read_tree

    gc.set_threshold(*GC_THRESHOLDS)  # as in serve's process
    compiler = Compiler()
    start = time.perf_counter()
    compiler.compile(read_tree(root)[0], revision=REVISION)
    first = time.perf_counter() - start
    change_one_app(root)
    start = time.perf_counter()
    files, walked = read_tree(root)
    result = compiler.compile(files, revision=f"{REVISION}-next", loaded=walked)
    again = time.perf_counter() - start
    if result.diagnostics:
        raise SystemExit(f"the changed repository does not validate: {result.diagnostics[:3]}")
    return {"first": first, "one_changed": again, "rss_peak_mib": _rss_mib()}


def _machine() -> str:
    import platform

    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs {model}".strip()


def in_subprocess(phase: str, root: Path, out: Path) -> dict[str, Any]:
    settle(out)
    proc = subprocess.run(
        [sys.executable, __file__, "--phase", phase, "--repo", str(root), "--out", str(out)],
        capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"phase {phase} failed:\n{proc.stdout}\n{proc.stderr}")
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


def _pincompile() -> list[str]:
    exe = Path(sys.executable).with_name("pincompile")
    found = str(exe) if exe.exists() else shutil.which("pincompile")
    return [found] if found else [sys.executable, "-m", "pincompile.cli"]


def settle(out: Path, wait: float = 300.0) -> None:
    """Wait until the output trees earlier runs replaced beside ``out`` are deleted (a
    compile deletes the tree it replaces in the background; deleting 76,000 files can take
    this filesystem a minute, and would slow the next run down)."""
    deadline = time.monotonic() + wait
    while (out.parent.is_dir() and time.monotonic() < deadline
           and any(p.name.startswith(f".{out.name}.old-") for p in out.parent.iterdir())):
        time.sleep(0.2)


PROBE_FILES = 2000


def file_creation_us(directory: Path) -> float:
    """Microseconds to create and write one small file in ``directory`` (a probe of
    :data:`PROBE_FILES` files, left there: deleting them would slow the next run down).

    On ext4 without a journal the allocator skips every inode deleted in the last minute
    (six minutes while its inode table block is not yet written back), so creating files
    soon after deleting many costs up to 25x more; the probe shows whether a run met
    such a filesystem."""
    directory.mkdir(parents=True)
    start = time.perf_counter()
    for i in range(PROBE_FILES):
        (directory / f"{i % 20}").mkdir(exist_ok=True)
        (directory / f"{i % 20}" / f"{i}.yaml").write_bytes(b"x" * 1500)
    return (time.perf_counter() - start) / PROBE_FILES * 1e6


def byte_compile() -> None:
    """Byte-compile pincompile's modules, as ``pip install`` does for an installed package
    (an editable install where PYTHONDONTWRITEBYTECODE is set would compile them from
    source on every CLI run)."""
    import compileall

    compileall.compile_dir(REPO / "pincompile", quiet=1)


def cli_compile(root: Path, out: Path | None, cache: Path | None = None,
                command: str = "compile", jobs: int | None = None) -> dict[str, Any]:
    """``pincompile compile`` (or ``validate``) as a subprocess; wall time, its own peak
    RSS (wait4) and the peak of its processes' RSS added up (sampled every 20 ms: with
    ``-j`` above 1 several processes run at once). ``cache``: the cache directory, else
    ``--no-cache``; ``out`` None: ``-o -`` (the stream goes to /dev/null)."""
    args = ["--cache-dir", str(cache)] if cache is not None else ["--no-cache"]
    settle(out if out is not None else root)
    if command == "compile":
        args += ["--out-dir", str(out) if out is not None else "-", "-q", "--revision", REVISION]
        args += ["-j", str(jobs)] if jobs is not None else []
    else:
        args += ["-q"]
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen([*_pincompile(), command, str(root), *args],
                                stdout=subprocess.DEVNULL, stderr=err)
        peak, reaped = [0], threading.Event()
        sampler = threading.Thread(target=_sample_rss, args=(proc.pid, peak, reaped),
                                   daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        took = time.perf_counter() - start
        reaped.set()
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            sys.exit(f"pincompile {command} failed ({proc.returncode}):\n"
                     f"{err.read().decode()[-3000:]}")
    own = usage.ru_maxrss / 1024
    return {"wall": took, "rss_peak_mib": own, "rss_total_mib": max(own, peak[0] / 1024)}


def _sample_rss(pid: int, peak: list[int], reaped: threading.Event) -> None:
    """Keep ``peak[0]`` at the largest sum of VmRSS (KiB) over ``pid`` and its children
    until ``reaped`` is set. It only reads /proc and never waits for ``pid``: the caller's
    ``wait4`` reaps it (a ``Popen.poll`` here could reap it first, and ``wait4`` then
    failed with ChildProcessError)."""
    while not reaped.is_set():
        total, todo = 0, [pid]
        while todo:
            pid = todo.pop()
            try:
                status = Path(f"/proc/{pid}/status").read_text()
                total += int(re.search(r"^VmRSS:\s+(\d+)", status, re.M)[1])  # type: ignore[index]
                todo += [int(c) for c in
                         Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
            except (OSError, TypeError):
                continue
        peak[0] = max(peak[0], total)
        time.sleep(0.02)


# --- driver ------------------------------------------------------------------------------

def best(runs: list[dict[str, Any]], key: str) -> dict[str, Any]:
    return min(runs, key=lambda r: r[key])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", type=int, default=10_000, help="apps to generate")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs of each phase; the fastest is reported")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", metavar="DIR", help="generate into DIR and keep it")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--no-cli", action="store_true", help="skip the CLI subprocess run")
    parser.add_argument("--results", action="store_true",
                        help="also write this run's section of bench/RESULTS.md")
    parser.add_argument("--phase", choices=["floor", "compile", "serve"],
                        help=argparse.SUPPRESS)
    parser.add_argument("--repo", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.phase:  # a worker process
        root, out = Path(args.repo), Path(args.out)
        phases = {"floor": phase_floor, "compile": lambda r: phase_compile(r, out),
                  "serve": phase_serve}
        data = phases[args.phase](root)
        print(json.dumps(data))
        return 0

    byte_compile()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="compile-bench-"))
    root, out = work / "repo", work / "out"
    runs = iter(range(1, 1 << 30))

    def fresh() -> Path:
        """An output directory of its own for each run (see :func:`file_creation_us`):
        nothing is replaced or deleted until the end."""
        return work / f"out-{next(runs)}"

    def log(message: str) -> None:  # progress on stderr (stdout: the table or JSON)
        print(message, file=sys.stderr, flush=True)

    try:
        if root.exists():
            shutil.rmtree(root)
        start = time.perf_counter()
        counts = generate(root, args.apps, args.seed)
        files = sum(1 for _ in root.rglob("*.yaml"))
        size = sum(p.stat().st_size for p in root.rglob("*.yaml"))
        log(f"generated {args.apps} apps ({files} files, {size / 2**20:.1f} MiB) in "
            f"{time.perf_counter() - start:.1f}s: {root}")
        probe = file_creation_us(work / "probe")
        log(f"file creation: {probe:.0f} us per file")
        floors, compiles, clis, singles, streams = [], [], [], [], []
        for n in range(args.repeat):
            log(f"run {n + 1}/{args.repeat}: floor ...")
            floors.append(in_subprocess("floor", root, out))
            log(f"  floor: {floors[-1]['floor']:.2f}s")
            log(f"run {n + 1}/{args.repeat}: compile ...")
            compiles.append(in_subprocess("compile", root, fresh()))
            log(f"  compile: {compiles[-1]['compile']:.2f}s")
            if not args.no_cli:
                log(f"run {n + 1}/{args.repeat}: pincompile compile --no-cache (CLI) ...")
                clis.append(cli_compile(root, fresh()))
                log(f"  CLI: {clis[-1]['wall']:.2f}s, {clis[-1]['rss_total_mib']:.0f} MiB")
                log(f"run {n + 1}/{args.repeat}: pincompile compile --no-cache -j 1 ...")
                singles.append(cli_compile(root, fresh(), jobs=1))
                log(f"  CLI -j 1: {singles[-1]['wall']:.2f}s")
                log(f"run {n + 1}/{args.repeat}: pincompile compile --no-cache -o - ...")
                streams.append(cli_compile(root, None))
                log(f"  CLI -o -: {streams[-1]['wall']:.2f}s, "
                    f"{streams[-1]['rss_total_mib']:.0f} MiB")
        cache = work / "cache"
        shutil.rmtree(cache, ignore_errors=True)
        log("pincompile compile, filling the cache ...")
        out = fresh()
        filling = cli_compile(root, out, cache)
        warm = cli_compile(root, out, cache)
        incrs = []
        for n in range(args.repeat):
            changed = change_one_app(root)
            log(f"incremental {n + 1}/{args.repeat}: changed replicas in {changed}; "
                "pincompile compile, warm cache ...")
            incrs.append(cli_compile(root, out, cache))
            log(f"  one app changed, warm cache, CLI: {incrs[-1]['wall']:.2f}s")
        incr = best(incrs, "wall")
        log("pincompile validate, warm cache: once, then after one app changed ...")
        cli_compile(root, None, cache, command="validate")
        change_one_app(root)
        checked = cli_compile(root, None, cache, command="validate")
        log(f"  one app changed, warm cache, validate: {checked['wall']:.2f}s")
        log("in-process Compiler (as serve runs it): compile; one app changed in the next "
            "commit, compile ...")
        serve = in_subprocess("serve", root, out)
        examples = REPO / "examples"
        cli_compile(examples, out, cache, command="validate")
        hook = cli_compile(examples, out, cache, command="validate")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    floor, comp = best(floors, "floor"), best(compiles, "compile")
    report: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "apps": args.apps,
        "clusters": CLUSTERS, "input_files": files, "input_mib": round(size / 2**20, 2),
        "kinds": counts, "cpus": os.cpu_count(), "loadavg": os.getloadavg(),
        "repeat": args.repeat, "file_creation_us": probe,
        "python": sys.version.split()[0], "machine": _machine(),
        "floor": floor, "compile": comp,
        "ratio_compile_over_floor": comp["compile"] / floor["floor"],
        "ratio_target": 2.0,
        "cache": {"fill_wall": filling["wall"], "unchanged_wall": warm["wall"],
                  "one_changed_wall": incr["wall"], "one_changed_rss_mib": incr["rss_peak_mib"],
                  "one_changed_walls": [r["wall"] for r in incrs],
                  "changed": changed, "target_s": 1.0,
                  "validate_one_changed_wall": checked["wall"]},
        "serve": serve,
        "validate_examples_warm_wall": hook["wall"],
    }
    if clis:
        cli = min(clis, key=lambda r: r["wall"])
        report["cli"] = cli
        report["ratio_cli_over_floor"] = cli["wall"] / floor["floor"]
        report["cli_one_process"] = min(singles, key=lambda r: r["wall"])
        report["cli_stream"] = min(streams, key=lambda r: r["wall"])
        # the machine's speed may change between runs: each run against its own floor too
        report["cli_ratios"] = [c["wall"] / f["floor"] for c, f in zip(clis, floors, strict=True)]
        report["cli_stream_ratios"] = [c["wall"] / f["floor"]
                                       for c, f in zip(streams, floors, strict=True)]
        report["jobs"] = len(os.sched_getaffinity(0))
    if args.results:
        write_results(report)
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=True))
    else:
        print("\n".join(table(report)))
    return 0


def _per_run(r: dict[str, Any], key: str) -> str:
    """Each run's time over the floor of the same run, for a note."""
    ratios = r.get(key)
    if not ratios or len(ratios) < 2:
        return ""
    return (f"each run over its own run's floor: {', '.join(f'{x:.2f}x' for x in ratios)} "
            f"(median {statistics.median(ratios):.2f}x); ")


def _all(walls: list[float] | None) -> str:
    """Every run's time, for a note."""
    if not walls or len(walls) < 2:
        return ""
    return f"best of {len(walls)}: {', '.join(f'{x:.2f}' for x in walls)} s; "


def table(r: dict[str, Any]) -> list[str]:
    """The report as Markdown (printed, and written into bench/RESULTS.md)."""
    f, c = r["floor"], r["compile"]
    lines = [
        f"{r['apps']} apps ({r['input_files']} files, {r['input_mib']} MiB) -> {c['objects']} "
        f"objects for {r['clusters']} clusters ({c['bytes'] / 2**20:.0f} MiB); {r['machine']}; "
        f"load average {' '.join(f'{x:.1f}' for x in r['loadavg'])}; creating a file "
        f"{r['file_creation_us']:.0f} us (probe); best of {r['repeat']}; "
        f"Python {r['python']}; {r['date']}.",
        "",
        f"Kinds: {', '.join(f'{k} {v}' for k, v in sorted(r['kinds'].items()))}.",
        "",
        "| measured | seconds | note |",
        "|---|---:|---|",
        f"| floor: parse inputs, libyaml `CSafeLoader` | {f['load']:.2f} | "
        f"{f['documents']} documents |",
        f"| floor: serialize outputs, C `json.dumps` | {f['serialize']:.2f} | {f['objects']} "
        "objects incl. placement |",
        f"| **floor** | **{f['floor']:.2f}** | |",
    ]
    for name, took in c["stages"].items():
        lines.append(f"| compile: {name} | {took:.2f} | {took / c['compile']:.0%} |")
    lines.append(f"| **compile** (in process, no cache) | **{c['compile']:.2f}** | "
                 f"**{r['ratio_compile_over_floor']:.2f}x floor** (target <= 2x) |")
    if "cli" in r:
        one = r["cli_one_process"]
        lines.append(f"| **`pincompile compile --no-cache`**, CLI wall | "
                     f"**{r['cli']['wall']:.2f}** | **{r['ratio_cli_over_floor']:.2f}x floor** "
                     f"(target <= 2x); {_per_run(r, 'cli_ratios')}expands and writes in "
                     f"{r['jobs']} processes; peak RSS "
                     f"{r['cli']['rss_total_mib']:.0f} MiB, all processes added up |")
        lines.append(f"| `pincompile compile --no-cache -j 1`, CLI wall | {one['wall']:.2f} | "
                     f"{one['wall'] / f['floor']:.2f}x floor in one process; peak RSS "
                     f"{one['rss_total_mib']:.0f} MiB |")
        if "cli_stream" in r:
            st = r["cli_stream"]
            lines.append(f"| **`pincompile compile --no-cache -o -`**, CLI wall | "
                         f"**{st['wall']:.2f}** | **{st['wall'] / f['floor']:.2f}x floor** "
                         f"(target <= 2x); {_per_run(r, 'cli_stream_ratios')}"
                         f"the same objects as one stream, no file per "
                         f"object; peak RSS {st['rss_total_mib']:.0f} MiB, all processes "
                         "added up |")
    k = r["cache"]
    lines += [
        f"| `pincompile compile`, filling the cache, CLI wall | {k['fill_wall']:.2f} | |",
        f"| `pincompile compile`, warm cache, nothing changed | {k['unchanged_wall']:.2f} | |",
        f"| **`pincompile compile`, warm cache, one app changed** | **{k['one_changed_wall']:.2f}**"
        f" | target < 1 s; {_all(k.get('one_changed_walls'))}peak RSS "
        f"{k['one_changed_rss_mib']:.0f} MiB |",
        f"| `pincompile validate`, warm cache, one app changed | "
        f"{k['validate_one_changed_wall']:.2f} | only the changed app is checked again |",
        f"| in-process `Compiler` (serve): first compile | {r['serve']['first']:.2f} | |",
        f"| in-process `Compiler` (serve): the next commit, one app changed | "
        f"{r['serve']['one_changed']:.2f} | every file read, only the changed app loaded, "
        "parsed, checked, placed and expanded again; the other objects get the new revision |",
        f"| `pincompile validate examples -q`, warm cache (pre-commit) | "
        f"{r['validate_examples_warm_wall']:.2f} | |",
        f"| peak RSS, in-process compile | | {c['rss_peak_mib']:.0f} MiB |",
    ]
    return lines


def write_results(r: dict[str, Any]) -> None:
    """Replace (or add) this bench's section for this app count in bench/RESULTS.md."""
    write_section(f"compile_bench apps={r['apps']}", f"compile_bench.py, {r['apps']} apps",
                  f"python bench/compile_bench.py --apps {r['apps']} --repeat {r['repeat']} "
                  "--results", table(r))

if __name__ == "__main__":
    sys.exit(main())
