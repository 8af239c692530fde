"""Whole reconcile passes on in-memory clusters (:mod:`tests.support.kube_fake`): a fake
fleet (a host and one cluster per Cluster spec, with controllers) for a spec repository,
and a pass with its requests counted, as the e2e tests had them on a real fleet."""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from pincompile.compiler import compile_path
from pincompile.contract import Result
from reconciler import engine
from reconciler.clock import SYSTEM_CLOCK, Clock
from reconciler.engine import Reconciler
from reconciler.model import Obj, PassReport
from reconciler.plan.cluster_plan import Options
from tests.support.git import git
from tests.support.kube_controllers import Controllers
from tests.support.kube_fake import FakeCluster, FakeFleet
from tests.support.wait import wait_for

FIXTURE_REPO = Path(__file__).parents[1] / "reconciler" / "fixtures" / "repo"
MEMBERS = ("rt-a", "rt-b", "rt-c")
ZONE = {"rt-a": "rt-east-a", "rt-b": "rt-east-b", "rt-c": "rt-east-c"}
SUNDAY = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
"""Passes run at an injected instant: a Sunday, outside every scaling window, unless a
test says otherwise (the api scaler's window is weekdays 09:00-17:00 Los Angeles time)."""
MONDAY_10_LA = datetime(2026, 11, 23, 18, 0, tzinfo=UTC)


def spec_repo(path: Path, source: Path = FIXTURE_REPO) -> Path:
    """A git repository at ``path`` holding a copy of ``source`` (the fixture repo)."""
    shutil.copytree(source, path)
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "initial")
    return path


def edit(repo: Path, rel: str, change: Callable[[list[dict[str, Any]]], None],
         message: str) -> None:
    """Change the YAML documents of one file and commit."""
    path = repo / rel
    docs = list(yaml.safe_load_all(path.read_text()))
    change(docs)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    commit(repo, message)


def commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message, "--allow-empty")


def set_image(image: str) -> Callable[[list[dict[str, Any]]], None]:
    def change(docs: list[dict[str, Any]]) -> None:
        docs[0]["spec"]["template"]["containers"][0]["image"] = image
    return change


def fake_fleet(result: Result, controllers: Controllers | None = None) -> FakeFleet:
    """A host and one in-memory cluster per Cluster spec of ``result`` (by context), every
    member's workloads followed by ``controllers`` (default: all become ready)."""
    controllers = controllers or Controllers()
    clusters = {"host": FakeCluster("host")}
    for name, entry in result.catalog.clusters.items():
        clusters[entry.resource.context] = controllers.install(FakeCluster(name))
    return FakeFleet(clusters)


def one_pass(reconciler: Reconciler, result: Result, wait: float | None = None,
             clock: Clock = SYSTEM_CLOCK) -> PassReport:
    """One pass of ``reconciler``, as ``apply`` runs it: with ``wait``, what it wrote has
    that many seconds of ``clock`` to turn healthy before the statuses are written."""
    with reconciler.pass_of(result) as flight:
        if wait is not None:
            reconciler.settle(flight, wait, clock)
    return flight.report


class FakePass:
    """One pass over a fake fleet by a new reconciler (or ``reconciler``), with every
    request counted. ``options``: the pass's :class:`Options`; ``engine``: more arguments
    of the :class:`Reconciler`; ``now``: the instant scaling windows are read at;
    ``echo``: told each line the pass says, as it says it; ``wait``: what the pass wrote
    has 5 s to turn healthy."""

    def __init__(self, fleet: FakeFleet, repo: Path | Result, *, wait: bool = False,
                 now: datetime = SUNDAY, reconciler: Reconciler | None = None,
                 echo: Callable[[str], None] = lambda _line: None,
                 engine: dict[str, Any] | None = None, **options: Any) -> None:
        self.lines: list[str] = []
        self.result = repo if isinstance(repo, Result) else compile_path(repo)
        own = reconciler is None

        def told(line: str) -> None:
            self.lines.append(line)
            echo(line)

        self.reconciler = reconciler or Reconciler(
            None, options=Options(**options), echo=told,
            clock=lambda: now, connect=fleet.connect, **(engine or {}))
        for access in self.reconciler.connections.values():
            access.stats.reset()
        self.report = one_pass(self.reconciler, self.result, 5.0 if wait else None)
        connections = self.reconciler.connections
        self.writes = Counter({n: c.stats.writes for n, c in connections.items()})
        self.lists = Counter({(n, r): k for n, c in connections.items()
                              for r, k in c.stats.lists.items()})
        self.dry_runs = Counter({n: c.stats.by_verb["dry-run"] for n, c in connections.items()})
        self.written = {n: Counter(c.stats.writes_by_resource) for n, c in connections.items()}
        """Writes per cluster, by resource (``deployments``, ``events`` ...)."""
        self.statuses = {"/".join(k): v for k, v in self.reconciler.statuses.items()}
        if own:
            self.reconciler.close()

    @property
    def member_writes(self) -> int:
        return sum(n for name, n in self.writes.items() if name != "host")

    @property
    def written_members(self) -> Counter[str]:
        """Writes to the member clusters, by resource."""
        return sum((c for n, c in self.written.items() if n != "host"), Counter())


def settle(reconciler: Reconciler, fleet: FakeFleet, timeout: float = 10.0) -> None:
    """Wait until a long-running reconciler's watch caches have seen every change their
    clusters made (a watch delivers its events a little later, more so on a loaded
    machine, and a pass reads the cache as it is)."""
    caches = [*((fleet.clusters[n], c) for n, c in reconciler.caches.items()),
              *([(fleet.clusters["host"], reconciler.host_cache)]
                if reconciler.host_cache else [])]

    def caught_up() -> bool:
        for cluster, cache in caches:
            with cluster.lock:
                last = {change.kind: change.version for change in cluster.history}
            if any(int(w.version or 0) < last.get(w.kind.kind, 0) for w in cache.watches):
                return False
        return True

    wait_for(caught_up, timeout, "the watch caches to catch up", interval=0.02)


def live(fleet: FakeFleet, cluster: str, kind: str, name: str, namespace: str = "shop",
         api_version: str | None = None) -> Obj | None:
    """The object as the in-memory ``cluster`` holds it (no request counted)."""
    versions = {"Deployment": "apps/v1", "Job": "batch/v1",
                "HorizontalPodAutoscaler": "autoscaling/v2"}
    return fleet.clusters[cluster].get({
        "apiVersion": api_version or versions.get(kind, "v1"), "kind": kind,
        "metadata": {"name": name, "namespace": namespace}})


def clusters_running(fleet: FakeFleet, name: str, kind: str = "Deployment") -> list[str]:
    """The members holding ``kind``/shop/``name``."""
    return [c for c in MEMBERS if live(fleet, c, kind, name) is not None]


KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: fake, cluster: {server: "https://127.0.0.1:9"}}]
users: [{name: fake, user: {token: fake}}]
contexts: [%s]
current-context: host
"""


def cli_on(fleet: FakeFleet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Point the command line at ``fleet``: its passes reach the in-memory clusters. The
    arguments to add (``--kubeconfig`` naming the fleet's contexts, and ``--at``)."""
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG % ", ".join(
        f"{{name: {c}, context: {{cluster: fake, user: fake}}}}" for c in fleet.clusters))
    monkeypatch.setattr(engine, "Connection",
                        lambda name, context, _kubeconfig: fleet.connect(name, context))
    return ["--kubeconfig", str(path), "--at", SUNDAY.isoformat()]
