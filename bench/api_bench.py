"""The PinCompute API at 1,000 apps x 6 member clusters: throughput and latency of GET one
app and of listing a project's apps with 50 concurrent clients (targets: >= 500 req/s,
p99 < 100 ms for one app), and the bytes of an app with and without managed fields.

The server is the API's ASGI app on uvicorn on a loopback port, in a process of its own
(so the clients do not share its interpreter), reading synthetic statuses (the cache's
warm case: bench/console_render.py's data) with every caller allowed; the clients are
aiohttp sessions in this process. Nothing here reaches a cluster.

    python bench/api_bench.py                        # 1,000 apps, 6 clusters, 50 clients
    python bench/api_bench.py --apps 10000 --seconds 5
    python bench/api_bench.py --results              # and update bench/RESULTS.md
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import socket
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp

from bench.console_render import PROJECTS, Everyone, Fixed, synthetic
from bench.results import write_section


def serve(sock: socket.socket, apps: int, clusters: int, seed: int) -> None:
    """The API on ``sock`` until killed (the server process)."""
    import uvicorn

    from reconciler.api.access import RateLimits
    from reconciler.api.app import Gateway, create_app
    from reconciler.store import Store

    store = Store.open(f"sqlite:///{tempfile.mkdtemp()}/insight.db")
    app = create_app(Gateway(apps=Fixed(synthetic(apps, clusters, seed)), store=store,
                             access=Everyone(), limits=RateLimits(1e9, 1_000_000_000)))
    server = uvicorn.Server(uvicorn.Config(app, lifespan="off", access_log=False,
                                           log_level="warning", http="h11",
                                           backlog=1024, limit_concurrency=1000))
    asyncio.run(server.serve(sockets=[sock]))


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", type=int, default=1000)
    parser.add_argument("--clusters", type=int, default=6, choices=range(1, 7))
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--results", action="store_true", help="update bench/RESULTS.md")
    args = parser.parse_args()
    statuses = synthetic(args.apps, args.clusters, args.seed)
    sock = socket.create_server(("127.0.0.1", 0), backlog=1024)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = multiprocessing.get_context("spawn").Process(
        target=serve, args=(sock, args.apps, args.clusters, args.seed), daemon=True)
    server.start()
    try:
        rows = run(base, statuses, args)
    finally:
        server.terminate()
        server.join(10)
    load_avg = " ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [f"{args.apps} apps x {args.clusters} member clusters, synthetic statuses (the "
             f"cache's warm case), every caller allowed; the API's app on uvicorn in its own "
             f"process on a loopback port; {args.clients} concurrent aiohttp clients for "
             f"{args.seconds:g} s per case after a warm-up; load average {load_avg}; "
             f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC. Targets: >= 500 req/s, p99 < 100 ms "
             "for one app.", "",
             "| call | req/s | p50 ms | p99 ms | bytes per answer |", "|---|---:|---:|---:|---:|",
             *rows[0], "", f"Target for one app: **{'met' if rows[2] else 'not met'}** at this "
             "load (the clients share the 2 cores with the server).", "",
             "| bytes per app | mean |", "|---|---:|", *rows[1]]
    print("\n".join(lines))
    if args.results:
        options = ("" if args.apps == 1000 else f" --apps {args.apps}") + \
            ("" if args.seconds == 10 else f" --seconds {args.seconds:g}")
        write_section(f"api_bench apps={args.apps}",
                      f"api_bench.py, {args.apps} apps x {args.clusters} clusters",
                      f"python bench/api_bench.py{options} --results", lines)


def run(base: str, statuses: dict[tuple[str, str, str], Any], args: argparse.Namespace
        ) -> tuple[list[str], list[str], bool]:
    keys = sorted(statuses)
    project = PROJECTS[1]
    cases = [("GET one app (a random one of all)",
              [f"/api/v1/apps/{k}/{p}/{n}" for k, p, n in keys]),
             (f"list a project's apps ({sum(k[1] == project for k in keys)} apps, one page)",
              [f"/api/v1/apps?project={project}&limit=500"])]
    asyncio.run(_wait_up(base))
    rows, met = [], True
    for label, paths in cases:
        asyncio.run(load(base, paths, args.clients, 1.0))  # warm-up
        times, elapsed, received = asyncio.run(load(base, paths, args.clients, args.seconds))
        times.sort()
        if paths is cases[0][1]:
            met = len(times) / elapsed >= 500 and times[int(len(times) * 0.99) - 1] < 100
        rows.append(f"| {label} | {len(times) / elapsed:,.0f} | {statistics.median(times):.1f}"
                    f" | {times[int(len(times) * 0.99) - 1]:.1f} | "
                    f"{received / len(times):,.0f} |")
    app_rows = sizes(statuses)
    sample = asyncio.run(load(base, [cases[0][1][0]], 1, 0.05))
    app_rows.append(f"| the API's document of one app (GET one app) | "
                    f"{sample[2] / max(1, len(sample[0])):,.0f} |")
    return rows, app_rows, met


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
