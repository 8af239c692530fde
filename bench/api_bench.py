"""The PinCompute API at 1,000 apps x 6 member clusters: throughput and latency of GET one
app and of listing a project's apps with 50 concurrent clients (targets: >= 500 req/s,
p99 < 100 ms for one app), the server's CPU time per call (steadier than wall time on a
shared machine), and the bytes of an app with and without managed fields.

The server is what ``serve`` serves (the API's ASGI app with the console mounted, audit
lines written, to /dev/null) on uvicorn on a loopback port, in a process of its own (so
the clients do not share its interpreter), reading synthetic statuses (the cache's warm
case: bench/console_render.py's data) with every caller allowed; the clients are aiohttp
sessions in this process. Nothing here reaches a cluster. ``--before REV`` serves the
same calls with git revision REV's code too, in the same run, before this tree's.

    python bench/api_bench.py                        # 1,000 apps, 6 clusters, 50 clients
    python bench/api_bench.py --apps 10000 --seconds 5
    python bench/api_bench.py --before fb4c5b4 --results   # and update bench/RESULTS.md
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp

from bench.console_render import PROJECTS, synthetic
from bench.results import write_section

REPO = Path(__file__).resolve().parents[1]
TIERS = ["web", "api", "batch"]


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


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def load(base: str, paths: list[str], clients: int, seconds: float
               ) -> tuple[list[float], float, int]:
    """``clients`` loops GETting a random path of ``paths`` for ``seconds``; each request's
    milliseconds, the elapsed seconds and the bytes received."""
    times: list[float] = []
    received = 0
    connector = aiohttp.TCPConnector(limit=clients)
    headers = {"Authorization": "Bearer bench"}
    async with aiohttp.ClientSession(base, connector=connector, headers=headers) as http:
        rng = random.Random(1)
        start = time.perf_counter()
        end = start + seconds

        async def client() -> None:
            nonlocal received
            while time.perf_counter() < end:
                sent = time.perf_counter()
                async with http.get(rng.choice(paths)) as answer:
                    body = await answer.read()
                    assert answer.status == 200, (answer.status, body[:200])
                times.append((time.perf_counter() - sent) * 1000)
                received += len(body)

        await asyncio.gather(*(client() for _ in range(clients)))
        return times, time.perf_counter() - start, received


def managed_fields(document: Any) -> Any:
    """The ``fieldsV1`` set the API server records for ``document`` (every map key, lists
    atomic)."""
    if isinstance(document, dict):
        return {f"f:{k}": managed_fields(v) for k, v in document.items()}
    return {}


def host_object(key: tuple[str, str, str], status: dict[str, Any], managed: bool
                ) -> dict[str, Any]:
    """The app's resource on the host as a LIST or WATCH returns it (spec as compiled,
    status as published), with or without its managed fields."""
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
             "fieldsV1": {"f:metadata": {"f:labels": managed_fields(labels)},
                          "f:spec": managed_fields(spec)}},
            {"manager": "pincompile", "operation": "Update", "apiVersion": "pincompute.io/v1",
             "time": "2026-11-26T09:00:00Z", "fieldsType": "FieldsV1",
             "subresource": "status", "fieldsV1": {"f:status": managed_fields(status)}}]
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
    code: str
    case: Case
    rate: float
    p50: float
    p99: float
    cpu_ms: float
    size: float
    load: float

    def row(self) -> str:
        return (f"| {self.code} | {self.case.label} | {self.rate:,.0f} | {self.p50:.1f} | "
                f"{self.p99:.1f} | **{self.cpu_ms:.2f}** | {self.size:,.0f} | {self.load:.1f} |")


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
    out = []
    try:
        asyncio.run(_wait_up(base))
        for case in todo:
            asyncio.run(load(base, case.paths, args.clients, 1.0))  # warm-up
            cpu = cpu_seconds(server.pid)
            times, elapsed, received = asyncio.run(load(base, case.paths, args.clients,
                                                        args.seconds))
            cpu = cpu_seconds(server.pid) - cpu
            times.sort()
            out.append(Measured(code, case, len(times) / elapsed, statistics.median(times),
                                times[int(len(times) * 0.99) - 1], 1000 * cpu / len(times),
                                received / len(times), os.getloadavg()[0]))
    finally:
        server.terminate()
        server.wait(10)
    return out


def tree_of(revision: str, into: Path) -> Path:
    """Git ``revision``'s files in ``into``, with this bench script (its server mode)."""
    archive = subprocess.run(["git", "archive", revision], cwd=REPO, check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    shutil.copy(__file__, into / "bench" / "api_bench.py")
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", type=int, default=1000)
    parser.add_argument("--clusters", type=int, default=6, choices=range(1, 7))
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--before", metavar="REV",
                        help="serve the same calls with git revision REV's code first")
    parser.add_argument("--results", action="store_true", help="update bench/RESULTS.md")
    parser.add_argument("--serve", type=int, metavar="FD", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve is not None:
        serve(args.serve, args.apps, args.clusters, args.seed)
        return
    statuses = synthetic(args.apps, args.clusters, args.seed)
    todo = cases(statuses)
    measured: list[Measured] = []
    if args.before:
        with tempfile.TemporaryDirectory() as tmp:
            measured += measure(f"`{args.before}`", tree_of(args.before, Path(tmp)), args,
                                [c for c in todo if not c.new])
    measured += measure("this tree", REPO, args, todo)
    now = [m for m in measured if m.code == "this tree"]
    met = now[0].rate >= 500 and now[0].p99 < 100
    load_avg = " ".join(f"{x:.1f}" for x in os.getloadavg())
    before = (f" `{args.before}`'s code served the same calls first, in the same run "
              "(`--before`).") if args.before else ""
    lines = [f"{args.apps} apps x {args.clusters} member clusters, synthetic statuses (the "
             f"cache's warm case), every caller allowed; what serve serves (the API with the "
             f"console mounted, audit lines written to /dev/null) on uvicorn in its own "
             f"process on a loopback port; {args.clients} concurrent aiohttp clients for "
             f"{args.seconds:g} s per case after a warm-up;{before} Server CPU per call: the "
             f"server process's user + system time over the case / calls answered (wall "
             f"times move with the load, CPU much less). Load average at the end "
             f"{load_avg}; {datetime.now(UTC):%Y-%m-%d %H:%M} UTC. Targets: >= 500 req/s, "
             "p99 < 100 ms for one app.", "",
             "| code | call | req/s | p50 ms | p99 ms | server CPU ms per call | "
             "bytes per answer | load (1 min) |",
             "|---|---|---:|---:|---:|---:|---:|---:|", *(m.row() for m in measured), "",
             f"Target for one app: **{'met' if met else 'not met'}** at this load (the "
             "clients share the 2 cores with the server).", "",
             "| bytes per app | mean |", "|---|---:|", *sizes(statuses),
             f"| the API's document of one app (GET one app) | {now[0].size:,.0f} |", "",
             "| cache memory (traced allocations) | size |", "|---|---:|",
             *cache_memory(statuses),
             "| the member pods' and Events' caches (MemberPods) | not measured |"]
    print("\n".join(lines))
    if args.results:
        options = ("" if args.apps == 1000 else f" --apps {args.apps}") + \
            ("" if args.seconds == 10 else f" --seconds {args.seconds:g}") + \
            (f" --before {args.before}" if args.before else "")
        write_section(f"api_bench apps={args.apps}",
                      f"api_bench.py, {args.apps} apps x {args.clusters} clusters",
                      f"python bench/api_bench.py{options} --results", lines)


async def _wait_up(base: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession() as http:
        while True:
            try:
                async with http.get(f"{base}/api/v1/openapi.json") as answer:
                    if answer.status == 200:
                        return
            except aiohttp.ClientError:
                if time.monotonic() > deadline:
                    raise
            await asyncio.sleep(0.2)


if __name__ == "__main__":
    main()
