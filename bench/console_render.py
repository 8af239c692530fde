"""The console's overview at 1,000 apps x 6 member clusters: server time of ``GET /``
(target < 300 ms), measured in process through the ASGI app (session check, authorization
per kind and project, filtering, paging, Jinja2 rendering), on synthetic statuses.

    python bench/console_render.py                 # 1,000 apps, 6 clusters, 30 rounds
    python bench/console_render.py --apps 10000 --rounds 10
    python bench/console_render.py --results       # and update bench/RESULTS.md
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fastapi.testclient import TestClient

from bench.results import write_section
from reconciler.api.access import Caller, RateLimits
from reconciler.api.app import Gateway, create_app
from reconciler.console.members import MemberHealth
from reconciler.console.routes import mount_console
from reconciler.console.session import SESSION_COOKIE
from reconciler.store import Store

CLUSTERS = ["rt-a", "rt-b", "rt-c", "batch-a", "batch-b", "gpu-a"]
PROJECTS = ["search", "ads", "ml", "platform-system"]
KINDS = ["PinApp", "PinterestService", "PinterestJobSet", "PinPod"]
PHASES = ["Healthy"] * 30 + ["Progressing", "Degraded", "Failed"]
READY = {"Healthy": (3, 3), "Progressing": (1, 2), "Degraded": (1, 2), "Failed": (0, 0),
         "Suspended": (0, 0)}
"""Ready pods of 3 a cell in each phase may show (a Suspended app wants none)."""
MESSAGES = {"Healthy": "", "Progressing": "rolling out: {n} of 3 pods updated",
            "Degraded": "{n} of 3 pods not ready", "Failed": "ImagePullBackOff: image not found",
            "Suspended": "stopped in its spec"}
WORST = ["Healthy", "Suspended", "Progressing", "Degraded", "Failed"]


class Everyone:
    """Every token is one user who may see everything (the access cache's warm case)."""

    def authenticate(self, token: str) -> Caller:
        return Caller("bench")

    def allowed(self, caller: Caller, action: str, kind: str, project: str) -> bool:
        return True

    def known_caller(self, token: str) -> Caller | None:  # answered from memory
        return self.authenticate(token)

    def known_decision(self, caller: Caller, action: str, kind: str, project: str
                       ) -> bool | None:
        return True


class Fixed:
    def __init__(self, statuses: Mapping[tuple[str, str, str], Mapping[str, Any]],
                 labels: Mapping[tuple[str, str, str], Mapping[str, str]] | None = None
                 ) -> None:
        self._statuses, self._labels = statuses, labels or {}

    def statuses(self) -> Mapping[tuple[str, str, str], Mapping[str, Any]]:
        return self._statuses

    def labels(self) -> Mapping[tuple[str, str, str], Mapping[str, str]]:
        return self._labels


class Members:
    """Member clusters' health as the overview's panel shows it; the last one Lost."""

    def __init__(self, clusters: int) -> None:
        self._health = [MemberHealth(c, True, nodes_ready=8, nodes=8) for c in CLUSTERS[:clusters]]
        if clusters > 1:
            self._health[-1] = MemberHealth(
                CLUSTERS[clusters - 1], False, problem="connection refused", failover="Lost",
                failover_reason="unreachable for 312s (grace 300s): connection refused",
                since="2026-11-26T08:55:00Z")

    def health(self) -> list[MemberHealth]:
        return self._health


def synthetic(apps: int, clusters: int, seed: int) -> dict[tuple[str, str, str], Any]:
    rng = random.Random(seed)
    out: dict[tuple[str, str, str], Any] = {}
    for i in range(apps):
        suspended = rng.random() < 0.03
        entries = []
        for c in CLUSTERS[:clusters]:
            phase = "Suspended" if suspended else rng.choice(PHASES)
            n = rng.randint(*READY[phase])
            entries.append({"name": c, "phase": phase, "readyReplicas": n,
                            "replicas": 0 if suspended else 3,
                            "message": MESSAGES[phase].format(n=n)})
        worst = max(entries, key=lambda e: WORST.index(e["phase"]))
        ready = sum(e["readyReplicas"] for e in entries)
        out[(KINDS[i % len(KINDS)], PROJECTS[i % len(PROJECTS)], f"app-{i:05}")] = {
            "phase": worst["phase"], "message": worst["message"],
            "ready": f"{ready}/{sum(e['replicas'] for e in entries)}", "clusters": entries,
            "lastAppliedRevision": f"{rng.getrandbits(64):016x}",
            "lastAppliedTime": "2026-11-26T09:00:00Z"}
    return out


def timed(client: TestClient, params: dict[str, str], rounds: int
          ) -> tuple[list[float], list[float]]:
    """Wall and CPU milliseconds (this process, all its threads) of each request."""
    client.get("/", params=params)  # templates compiled once
    times, cpu = [], []
    for _ in range(rounds):
        start, start_cpu = time.perf_counter(), time.process_time()
        answer = client.get("/", params=params)
        times.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
        assert answer.status_code == 200, answer.status_code
    return times, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", type=int, default=1000)
    parser.add_argument("--clusters", type=int, default=6, choices=range(1, 7))
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--results", action="store_true", help="update bench/RESULTS.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = Store.open(f"sqlite:///{tmp}/insight.db")
        app = create_app(Gateway(apps=Fixed(synthetic(args.apps, args.clusters, args.seed)),
                                 store=store, access=Everyone(),
                                 limits=RateLimits(1e9, 1_000_000_000)))
        mount_console(app, members=Members(args.clusters))
        session = app.state.console.sessions.start("bench")
        client = TestClient(app, cookies={SESSION_COOKIE: session})
        cases = [("first page, 50 rows", {}), ("first page, 200 rows", {"size": "200"}),
                 ("last page, 50 rows", {"page": str(-(-args.apps // 50))}),
                 ("filtered: project + phase + search", {"project": "ads", "phase": "Degraded",
                                                        "q": "app-00"}),
                 ("one cluster's Failed cells", {"cluster": "rt-b", "phase": "Failed"})]
        rows = []
        for label, params in cases:
            wall, cpu = timed(client, params, args.rounds)
            times = sorted(wall)
            rows.append(f"| {label} | {statistics.median(times):.1f} | "
                        f"{times[int(len(times) * 0.95) - 1]:.1f} | {times[-1]:.1f} | "
                        f"{statistics.median(cpu):.1f} |")
        store.close()
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [f"{args.apps} apps x {args.clusters} member clusters, synthetic statuses; "
             f"{args.rounds} requests per case through the ASGI app in process (session, "
             f"authorization, filter, page, member clusters panel, Jinja2); load average "
             f"{load}; "
             f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC. Target: < 300 ms.", "",
             "| GET / | median ms | p95 ms | max ms | median CPU ms |",
             "|---|---:|---:|---:|---:|", *rows]
    print("\n".join(lines))
    if args.results:
        options = "" if args.apps == 1000 else f" --apps {args.apps} --rounds {args.rounds}"
        write_section(f"console_render apps={args.apps}",
                      f"console_render.py, {args.apps} apps x {args.clusters} clusters",
                      f"python bench/console_render.py{options} --results", lines)


if __name__ == "__main__":
    main()
