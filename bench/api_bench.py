"""The PinCompute API at 1,000 apps x 6 member clusters: throughput and latency of GET one
app and of listing a project's apps with 50 concurrent clients (targets: >= 500 req/s,
p99 < 100 ms for one app), the server's CPU time per call (steadier than wall time on a
shared machine), the bytes of an app with and without managed fields, and the memory of
the API's caches (the host's app resources, the member clusters' pods and Events).

The server is what ``serve`` serves (the API's ASGI app with the console mounted, audit
lines written, to /dev/null) on uvicorn on a loopback port, in a process of its own,
reading synthetic statuses (the cache's warm case: bench/console_render.py's data) with
every caller allowed. The clients are wrk's (bench/api_load.py; Debian's ``wrk``), which
spend a few tens of microseconds per request, so the server is what the numbers measure.
The baseline (bench/kube_baseline.py) is the fleet's host kube-apiserver answering GET of
one app resource to the same load generator: it starts a fleet of its own, so run the
bench under ``flock /tmp/e2e.lock`` where e2e tests run. ``--before REV`` serves the same
calls with git revision REV's code too, in the same run, before this tree's.

    flock /tmp/e2e.lock python bench/api_bench.py      # 1,000 apps, 6 clusters, 50 clients
    python bench/api_bench.py --apps 10000 --seconds 5 --no-baseline
    flock /tmp/e2e.lock python bench/api_bench.py --results   # and update bench/RESULTS.md
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import api_load, member_caches
from bench.console_render import CLUSTERS, PROJECTS, synthetic
from bench.results import write_section

REPO = Path(__file__).resolve().parents[1]
TIERS = ["web", "api", "batch"]
HELPERS = ("api_load.py", "member_caches.py", "kube_baseline.py")
"""This bench's modules, copied into an older revision's tree (``--before``)."""
HEADERS = {"Authorization": "Bearer bench"}


def labels_of(statuses: dict[tuple[str, str, str], Any]) -> dict[tuple[str, str, str],
                                                                  dict[str, str]]:
    """The apps' spec labels (and the project label pincompile adds): a tier each."""
    return {key: {"pincompute.io/project": key[1], "tier": TIERS[i % len(TIERS)]}
            for i, key in enumerate(sorted(statuses))}


def serve(fd: int, apps: int, clusters: int, seed: int) -> None:
    """The API on the listening socket ``fd`` until killed (the server process)."""
    import logging

    import uvicorn

    from bench.console_render import Everyone, Fixed
    from reconciler.api.access import RateLimits
    from reconciler.api.app import Gateway, create_app
    from reconciler.console.routes import mount_console
    from reconciler.store import Store

    logging.basicConfig(level=logging.INFO, handlers=[logging.FileHandler(os.devnull)])
    statuses = synthetic(apps, clusters, seed)
    try:
        source = Fixed(statuses, labels_of(statuses))
    except TypeError:  # a revision from before label selectors (--before)
        source = Fixed(statuses)
    store = Store.open(f"sqlite:///{tempfile.mkdtemp()}/insight.db")
    app = create_app(Gateway(apps=source, store=store, access=Everyone(),
                             limits=RateLimits(1e9, 1_000_000_000)))
    mount_console(app)
    server = uvicorn.Server(uvicorn.Config(app, lifespan="off", access_log=False,
                                           log_level="warning", http="h11",
                                           backlog=1024, limit_concurrency=1000))
    asyncio.run(server.serve(sockets=[socket.socket(fileno=fd)]))


def cpu_seconds(pids: Iterable[int]) -> float:
    """User + system CPU seconds of processes ``pids`` (all their threads) so far."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def host_object(key: tuple[str, str, str], status: dict[str, Any], managed: bool
                ) -> dict[str, Any]:
    """The app's resource on the host as a LIST or WATCH returns it (spec as compiled,
    status as published), with or without its managed fields."""

    def fields(document: Any) -> Any:
        return member_caches.fields(document, keyed_lists=False)

    kind, project, name = key
    spec = {"replicas": 3, "template": {"containers": [
        {"name": "main", "image": f"registry.internal/{project}/{name}:1.4.2",
         "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]},
        "placement": {"clusters": 6}}
    labels = {"app.kubernetes.io/managed-by": "pincompile", "pincompute.io/app": name}
    metadata: dict[str, Any] = {
        "name": name, "namespace": project, "labels": labels, "generation": 4,
        "uid": "3f1c2b7e-8d4a-4e55-9a61-0c2f5b9d7e11", "resourceVersion": "183344",
        "creationTimestamp": "2026-11-20T09:00:00Z"}
    if managed:
        metadata["managedFields"] = [
            {"manager": "pincompile", "operation": "Apply", "apiVersion": "pincompute.io/v1",
             "time": "2026-11-26T09:00:00Z", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:metadata": {"f:labels": fields(labels)},
                          "f:spec": fields(spec)}},
            {"manager": "pincompile", "operation": "Update", "apiVersion": "pincompute.io/v1",
             "time": "2026-11-26T09:00:00Z", "fieldsType": "FieldsV1",
             "subresource": "status", "fieldsV1": {"f:status": fields(status)}}]
    return {"apiVersion": "pincompute.io/v1", "kind": kind, "metadata": metadata,
            "spec": spec, "status": status}


def sizes(statuses: dict[tuple[str, str, str], Any]) -> list[str]:
    def mean(managed: bool) -> float:
        return statistics.mean(len(json.dumps(host_object(k, dict(v), managed)).encode())
                               for k, v in statuses.items())

    with_fields, without = mean(True), mean(False)
    return [f"| the host's object, with managed fields | {with_fields:,.0f} |",
            f"| the host's object, managed fields stripped | {without:,.0f} "
            f"({100 * (1 - without / with_fields):.0f} % fewer) |"]


def cache_memory(statuses: dict[tuple[str, str, str], Any]) -> list[str]:
    """What the API's host cache (:class:`reconciler.api.sources.HostApps`) holds for
    these apps: each app resource as a watch decodes it (managed fields included), and the
    status and label mappings built from them; traced Python allocations, in MiB."""
    import tracemalloc

    from reconciler.api.sources import statuses_and_labels
    texts = [json.dumps(host_object(k, dict(v), True)) for k, v in statuses.items()]
    tracemalloc.start()
    objects = [json.loads(text) for text in texts]
    held = tracemalloc.get_traced_memory()[0]
    built = statuses_and_labels(objects)
    both = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del built
    mib = 1024 * 1024
    return [f"| the host cache's objects ({len(objects):,} app resources, as watched) | "
            f"{held / mib:.1f} MiB ({held / len(objects):,.0f} B per app) |",
            f"| its status and label mappings | {(both - held) / mib:.1f} MiB |"]


@dataclass
class Case:
    label: str
    paths: list[str]
    new: bool = False
    """Only this tree serves it (a revision before it answers something else)."""


@dataclass
class Measured:
    server: str
    case: Case
    load: api_load.Load
    cpu_ms: float
    size: float
    load_avg: float

    def row(self) -> str:
        got = self.load
        return (f"| {self.server} | {self.case.label} | {got.rate:,.0f} | {got.p50_ms:.1f} | "
                f"{got.p99_ms:.1f} | **{self.cpu_ms:.2f}** | {got.cpu_ms:.3f} | "
                f"{self.size:,.0f} | {self.load_avg:.1f} |")


def cases(statuses: dict[tuple[str, str, str], Any]) -> list[Case]:
    keys = sorted(statuses)
    project = PROJECTS[1]
    labels = labels_of(statuses)
    selected = sum(k[1] == project and labels[k]["tier"] == "web" for k in keys)
    return [Case("GET one app (a random one of all)",
                 [f"/api/v1/apps/{k}/{p}/{n}" for k, p, n in keys]),
            Case(f"list a project's apps ({sum(k[1] == project for k in keys)} apps, "
                 "one page)", [f"/api/v1/apps?project={project}&limit=500"]),
            Case(f"list a project's apps with `selector=tier=web` ({selected} apps)",
                 [f"/api/v1/apps?project={project}&selector=tier%3Dweb&limit=500"], new=True)]


def measure_case(server: str, base: str, headers: dict[str, str], pids: list[int],
                 case: Case, args: argparse.Namespace) -> Measured:
    """One case's load (after a second's warm-up) and the servers' CPU over it."""
    api_load.run(base, case.paths, args.clients, 1.0, headers)
    cpu = cpu_seconds(pids)
    got = api_load.run(base, case.paths, args.clients, args.seconds, headers)
    cpu = cpu_seconds(pids) - cpu
    if got.errors or not got.requests:
        raise RuntimeError(f"{server}, {case.label}: {got.errors} errors of "
                           f"{got.requests} requests")
    measured = Measured(server, case, got, 1000 * cpu / got.requests,
                        api_load.body_bytes(base, case.paths, headers), os.getloadavg()[0])
    print(measured.row(), flush=True)
    return measured


def measure(code: str, tree: Path, args: argparse.Namespace, todo: list[Case]
            ) -> list[Measured]:
    """Each case against a server running ``tree``'s code (a process of its own)."""
    sock = socket.create_server(("127.0.0.1", 0), backlog=1024)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = subprocess.Popen(
        [sys.executable, str(tree / "bench" / "api_bench.py"), "--serve", str(sock.fileno()),
         "--apps", str(args.apps), "--clusters", str(args.clusters), "--seed", str(args.seed)],
        pass_fds=[sock.fileno()], env={**os.environ, "PYTHONPATH": ""})
    sock.close()
    try:
        wait_up(base)
        return [measure_case(code, base, HEADERS, [server.pid], case, args) for case in todo]
    finally:
        server.terminate()
        server.wait(10)


def baseline(args: argparse.Namespace, statuses: dict[tuple[str, str, str], Any]
             ) -> list[Measured]:
    """GET of one app resource from the host kube-apiserver of a fleet of its own, from
    etcd (a plain GET) and from its watch cache (``resourceVersion=0``)."""
    from bench.kube_baseline import host_server, path_of

    paths = [path_of(key) for key in sorted(statuses)]
    with host_server(statuses) as host:
        pids = list(host.pids.values())
        return [measure_case("host kube-apiserver", host.base, host.headers, pids, case, args)
                for case in [
                    Case("GET one app resource (a random one of all; read from etcd)", paths),
                    Case("... with `?resourceVersion=0` (from its watch cache)",
                         [f"{p}?resourceVersion=0" for p in paths])]]


def tree_of(revision: str, into: Path) -> Path:
    """Git ``revision``'s files in ``into``, with this bench's scripts (its server mode)."""
    archive = subprocess.run(["git", "archive", revision], cwd=REPO, check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    for name in (Path(__file__).name, *HELPERS):
        shutil.copy(Path(__file__).with_name(name), into / "bench" / name)
    return into


def report(args: argparse.Namespace, statuses: dict[tuple[str, str, str], Any],
           measured: list[Measured]) -> list[str]:
    """What the run found, as bench/RESULTS.md shows it."""
    now = [m for m in measured if m.server == "this tree"]
    kube = [m for m in measured if m.server == "host kube-apiserver"]
    met = now[0].load.rate >= 500 and now[0].load.p99_ms < 100
    load_avg = " ".join(f"{x:.1f}" for x in os.getloadavg())
    before = (f" `{args.before}`'s code served the same calls first, in the same run "
              "(`--before`).") if args.before else ""
    ratio = [] if not kube else [
        "GET one app, the API against the host kube-apiserver's GET of one app resource "
        f"(read from etcd; from its watch cache): {now[0].load.rate:,.0f} req/s against "
        f"{kube[0].load.rate:,.0f} and {kube[1].load.rate:,.0f} "
        f"(**{now[0].load.rate / kube[0].load.rate:.2f}x** and "
        f"{now[0].load.rate / kube[1].load.rate:.2f}x), server CPU per call "
        f"{now[0].cpu_ms:.2f} ms against {kube[0].cpu_ms:.2f} and {kube[1].cpu_ms:.2f} ms "
        f"({now[0].cpu_ms / kube[0].cpu_ms:.2f}x and {now[0].cpu_ms / kube[1].cpu_ms:.2f}x), "
        f"p99 {now[0].load.p99_ms:.1f} ms against {kube[0].load.p99_ms:.1f} and "
        f"{kube[1].load.p99_ms:.1f} ms. kube-apiserver (Go) runs on both cores, the API's "
        "server on one (one process, one event loop).", ""]
    apps = sorted(statuses)
    return [f"{args.apps} apps x {args.clusters} member clusters, synthetic statuses (the "
            f"cache's warm case), every caller allowed; what serve serves (the API with the "
            f"console mounted, audit lines written to /dev/null) on uvicorn in its own "
            f"process on a loopback port. Load: wrk, {args.clients} keep-alive connections "
            f"over {api_load.THREADS} threads, each GETting a random path of the case as soon "
            f"as its last answer came, for {args.seconds:g} s per case after a 1 s warm-up "
            f"(wrk's own percentiles; its CPU per call is in the table)."
            f"{before} Baseline: the fleet's host kube-apiserver (a fleet of the host and "
            f"one member cluster, started for the bench) answering GET of one of "
            f"{args.apps:,} app resources (the examples' spec of its kind, the same "
            f"synthetic status) to the same load, with a ServiceAccount token bound to "
            f"cluster-admin. Server CPU per call: the server processes' user + system time "
            f"over the case / calls answered (the API's one process; kube-apiserver + etcd). "
            f"Load average at the end {load_avg}; {datetime.now(UTC):%Y-%m-%d %H:%M} UTC. "
            "Targets: >= 500 req/s, p99 < 100 ms for one app.", "",
            "| server | call | req/s | p50 ms | p99 ms | server CPU ms per call | "
            "wrk CPU ms per call | bytes per answer | load (1 min) |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|", *(m.row() for m in measured), "",
            f"Target for one app: **{'met' if met else 'not met'}** at this load "
            f"({now[0].load.rate:,.0f} req/s, p99 {now[0].load.p99_ms:.1f} ms; wrk and the "
            "server share the 2 cores).", "", *ratio,
            "| bytes per app | mean |", "|---|---:|", *sizes(statuses),
            f"| the API's document of one app (GET one app) | {now[0].size:,.0f} |", "",
            "| cache memory (traced Python allocations, objects as a watch decodes them) | "
            "size |", "|---|---:|", *cache_memory(statuses),
            *member_caches.memory(apps, CLUSTERS[:args.clusters])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", type=int, default=1000)
    parser.add_argument("--clusters", type=int, default=6, choices=range(1, 7))
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--before", metavar="REV",
                        help="serve the same calls with git revision REV's code first")
    parser.add_argument("--baseline", action=argparse.BooleanOptionalAction, default=True,
                        help="GET one app resource from a fleet's host kube-apiserver too")
    parser.add_argument("--results", action="store_true", help="update bench/RESULTS.md")
    parser.add_argument("--serve", type=int, metavar="FD", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve is not None:
        serve(args.serve, args.apps, args.clusters, args.seed)
        return
    statuses = synthetic(args.apps, args.clusters, args.seed)
    todo = cases(statuses)
    measured: list[Measured] = []
    try:
        if args.before:
            with tempfile.TemporaryDirectory() as tmp:
                measured += measure(f"`{args.before}`", tree_of(args.before, Path(tmp)),
                                    args, [c for c in todo if not c.new])
        measured += measure("this tree", REPO, args, todo)
        if args.baseline:
            measured += baseline(args, statuses)
    except api_load.LoadToolMissing as exc:
        sys.exit(f"api_bench: {exc}")
    lines = report(args, statuses, measured)
    print("\n".join(lines))
    if args.results:
        options = ("" if args.apps == 1000 else f" --apps {args.apps}") + \
            ("" if args.seconds == 10 else f" --seconds {args.seconds:g}") + \
            (f" --before {args.before}" if args.before else "") + \
            ("" if args.baseline else " --no-baseline")
        write_section(f"api_bench apps={args.apps}",
                      f"api_bench.py, {args.apps} apps x {args.clusters} clusters",
                      f"flock /tmp/e2e.lock python bench/api_bench.py{options} --results",
                      lines)


def wait_up(base: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{base}/api/v1/openapi.json", timeout=5) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            if time.monotonic() > deadline:
                raise
        time.sleep(0.2)


if __name__ == "__main__":
    main()
