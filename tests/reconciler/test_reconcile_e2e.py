"""The reconciler on real control planes (the session fleet, kwok nodes): what only real
controllers and a real API server show. Every decision of a pass is tested without a
cluster (``test_engine.py``, ``plan/``, ``rollout/``, ``failover/``, on the in-memory API
server that ``clients/test_access_contract.py`` holds to a real one); here:

* a pass converges real controllers (Deployments available, a Job complete, a PinPod
  running, HPAs assessed), and the pass after it finds nothing to change against what the
  real API server defaulted: no write, no dry-run, one LIST per kind;
* a new image rolls out zone by zone, each zone only once the real Deployments before
  it are rolled out, and an image that never becomes ready halts after the first zone;
* a replace waits for the garbage collector to remove the old Job and its pods.

Each test reconciles a project of its own (a narrowed pass: ``apply -p PROJECT``) and
deletes its namespaces after, so it shares the session fleet with every other module.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from pincompile.cli import cli
from pincompile.compiler import compile_path
from pincompile.selector import Targets
from reconciler.clients.connect import Connection
from reconciler.clients.record import RECORD_ENV, read_requests
from reconciler.clients.stats import WRITE_VERBS
from reconciler.engine import Reconciler
from reconciler.fleet import fleet as fleet_mod
from reconciler.fleet.clusters import ClusterSpec
from reconciler.host import spec_kinds
from reconciler.model import Obj, PassReport
from reconciler.plan import applied
from reconciler.plan.cluster_plan import Options
from tests.support.fake_passes import commit, edit, one_pass
from tests.support.git import git
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e
SUNDAY = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
"""Scaling windows are read on a Sunday: none open."""
HEALTH_TIMEOUT = 20
"""web's rollout.healthTimeout, seconds (also its Deployments' progressDeadlineSeconds)."""
WEB, BATCH = 0, 4
"""Where web and batch are among the documents of ``APPS``."""

PROJECT = """\
apiVersion: pincompute.io/v1
kind: Project
metadata: {{name: {project}}}
spec:
  namespace: {project}
  owners: [team-e2e]
  quota:
    reserved: {{cpu: "20", memory: 40Gi}}
    ondemand: {{cpu: "20", memory: 40Gi}}
    preemptible: {{cpu: "10", memory: 20Gi}}
"""
APPS = """\
apiVersion: pincompute.io/v1
kind: PinApp
metadata: {{name: web, project: {project}}}
spec:
  replicas: 3
  tier: ondemand
  template:
    containers:
      - name: main
        image: registry.internal/e2e/web:1.0.0
        ports: [{{name: http, containerPort: 8080}}]
        resources: {{cpu: 100m, memory: 128Mi}}
  placement: {{regions: [{region}], spread: zone, maxClusters: 3}}
  rollout: {{strategy: zone-by-zone, healthTimeout: {timeout}s}}
  service:
    ports: [{{name: http, port: 80, targetPort: 8080}}]
---
apiVersion: pincompute.io/v1
kind: PinApp
metadata: {{name: api, project: {project}}}
spec:
  replicas: 4
  tier: reserved
  template:
    containers:
      - name: main
        image: registry.internal/e2e/api:2.0.0
        resources: {{cpu: 100m, memory: 128Mi}}
  placement: {{regions: [{region}], spread: zone, maxClusters: 2}}
  rollout: {{strategy: all-at-once}}
---
apiVersion: pincompute.io/v1
kind: PinScaler
metadata: {{name: api, project: {project}}}
spec:
  target: api
  minReplicas: 2
  maxReplicas: 6
  metrics: [{{type: cpu, targetUtilization: 60}}]
---
apiVersion: pincompute.io/v1
kind: PinPod
metadata: {{name: notebook, project: {project}}}
spec:
  tier: ondemand
  placement: {{regions: [{region}]}}
  restartPolicy: Always
  containers:
    - name: jupyter
      image: registry.internal/e2e/jupyter:2024.10.1
      resources: {{cpu: 100m, memory: 256Mi}}
---
apiVersion: pincompute.io/v1
kind: PinterestJobSet
metadata: {{name: batch, project: {project}}}
spec:
  completions: 2
  parallelism: 2
  tier: preemptible
  placement: {{regions: [{region}]}}
  template:
    containers:
      - name: worker
        image: registry.internal/e2e/batch:1.0.0
        resources: {{cpu: 100m, memory: 64Mi}}
"""


@dataclass
class Project:
    """A spec repository of the session fleet's clusters and one project of this test."""

    name: str
    repo: Path
    fleet: fleet_mod.FleetState
    zones: dict[str, str]
    """member cluster -> its zone"""

    @property
    def namespace(self) -> Obj:
        """Its namespace (the same in every cluster and on the host)."""
        return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.name}}

    @property
    def apps(self) -> str:
        """The file of its apps, in the repository."""
        return f"apps/{self.name}/apps.yaml"

    def access(self, cluster: str) -> Connection:
        return Connection(cluster, cluster, str(self.fleet.kubeconfig))

    def live(self, cluster: str, kind: str, name: str) -> Obj | None:
        versions = {"Deployment": "apps/v1", "Job": "batch/v1"}
        conn = self.access(cluster)
        try:
            return conn.get({"apiVersion": versions.get(kind, "v1"), "kind": kind,
                             "metadata": {"name": name, "namespace": self.name}})
        finally:
            conn.close()

    def running(self, name: str, kind: str = "Deployment") -> list[str]:
        return [c for c in sorted(self.zones) if self.live(c, kind, name) is not None]


@pytest.fixture(scope="module")
def deleting(fleet: fleet_mod.FleetState) -> Iterator[list[Project]]:
    """Projects whose namespaces the module's tests deleted: gone before the next module
    (it reconciles the same clusters, and would count what is left as its own to prune).
    Waited for once, at the end: the deletions run meanwhile."""
    projects: list[Project] = []
    yield projects
    for project in projects:
        wait_gone(project)


@pytest.fixture
def project(fleet: fleet_mod.FleetState, fleet_specs: dict[str, ClusterSpec],
            deleting: list[Project], tmp_path: Path) -> Iterator[Project]:
    """A project of this test's own on the session fleet; its namespaces deleted after."""
    name = f"rt-{uuid.uuid4().hex[:6]}"
    repo = tmp_path / "repo"
    (repo / "platform").mkdir(parents=True)
    docs = [d for source in sorted({s.source.split(":")[0] for s in fleet_specs.values()})
            for d in yaml.safe_load_all(Path(source).read_text())
            if d and d.get("kind") == "Cluster"]
    (repo / "platform/clusters.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
    regions: dict[str, set[str]] = {}
    for spec in fleet_specs.values():
        regions.setdefault(spec.region, set()).add(spec.zone)
    region = max(sorted(regions), key=lambda r: len(regions[r]))
    (repo / "platform/project.yaml").write_text(PROJECT.format(project=name))
    (repo / "apps" / name).mkdir(parents=True)
    (repo / "apps" / name / "apps.yaml").write_text(
        APPS.format(project=name, region=region, timeout=HEALTH_TIMEOUT))
    git(repo, "init", "-q", "-b", "main")
    commit(repo, "specs")
    found = Project(name, repo, fleet, {s.name: s.zone for s in fleet_specs.values()})
    seed_priority_classes(found)
    try:
        yield found
    finally:
        for cluster in ["host", *found.zones]:
            access = found.access(cluster)
            access.delete(found.namespace)
            access.close()
        deleting.append(found)


def wait_gone(project: Project, timeout: float = 90.0) -> None:
    """Until the project's namespace is gone everywhere (at most ``timeout``)."""
    accesses = [project.access(c) for c in ["host", *project.zones]]
    try:
        with contextlib.suppress(AssertionError):  # still going: its test is over all the same
            wait_for(lambda: all(a.get(project.namespace) is None for a in accesses), timeout,
                     f"namespace {project.namespace} gone", interval=1.0)
    finally:
        for access in accesses:
            access.close()


def seed_priority_classes(project: Project) -> None:
    """The PriorityClasses the project's pods name, applied as a full pass would (a pass
    narrowed to a project writes none: they belong to no app)."""
    for manifest in compile_path(project.repo).manifests:
        if manifest.obj["kind"] == "PriorityClass":
            conn = project.access(manifest.cluster)
            conn.apply(applied.stamp(manifest.obj))
            conn.close()


class Pass:
    """One pass narrowed to the project, in process, with every request counted."""

    def __init__(self, project: Project, *, echo: Callable[[str], None] = lambda _l: None,
                 **options: Any) -> None:
        self.lines: list[str] = []

        def told(line: str) -> None:
            self.lines.append(line)
            echo(line)

        reconciler = Reconciler(str(project.fleet.kubeconfig), options=Options(**options),
                                echo=told, clock=lambda: SUNDAY,
                                apps=Targets(project=project.name))
        try:
            self.report: PassReport = one_pass(reconciler, compile_path(project.repo), wait=120)
            connections = reconciler.connections
            self.writes = Counter({n: c.stats.writes for n, c in connections.items()})
            self.lists = Counter({(n, r): k for n, c in connections.items()
                                  for r, k in c.stats.lists.items()})
            self.statuses = {"/".join(k): v for k, v in reconciler.statuses.items()}
        finally:
            reconciler.close()


def converge(project: Project, want: Callable[[Pass], bool], timeout: float = 150.0) -> Pass:
    """Run passes until ``want`` holds (each reads the objects' live health)."""
    deadline = time.monotonic() + timeout
    while True:
        run = Pass(project)
        if want(run) or time.monotonic() > deadline:
            return run
        time.sleep(3)


def test_a_pass_converges_real_controllers_and_the_next_finds_nothing_to_change(
        project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = Pass(project)
    assert first.report.ok, (first.report, first.lines)
    wanted = {f"PinApp/{project.name}/web": "Healthy", f"PinApp/{project.name}/api": "Healthy",
              f"PinPod/{project.name}/notebook": "Healthy",
              f"PinterestJobSet/{project.name}/batch": "Completed"}
    done = converge(project, lambda r: all(r.statuses.get(app, {}).get("phase") == phase
                                           for app, phase in wanted.items()))
    for app, phase in wanted.items():
        assert done.statuses[app]["phase"] == phase, (app, done.statuses[app])
    web = done.statuses[f"PinApp/{project.name}/web"]
    assert web["ready"] == "3/3" and len(web["clusters"]) == 3
    host = project.access("host")
    try:
        stored = host.list(next(k for k in spec_kinds() if k.kind == "PinApp"))["items"]
    finally:
        host.close()
    mine = {o["metadata"]["name"]: o for o in stored if o["metadata"]["namespace"] == project.name}
    assert sorted(mine) == ["api", "web"]
    assert mine["web"]["status"]["phase"] == "Healthy"

    # against what the real API server defaulted, every record answers: nothing to send
    # for the project's objects (the fleet's shared ones a narrowed pass plans too, and
    # leaves alone: those of no app, never created here)
    recorded = tmp_path / "requests.jsonl"
    monkeypatch.setenv(RECORD_ENV, str(recorded))
    again = Pass(project)
    assert again.report.ok
    assert sum(n for c, n in again.writes.items() if c != "host") == 0, again.lines
    requests = read_requests(str(recorded))
    assert any(r.verb == "list" for r in requests)  # every request is recorded
    sent = [r for r in requests if r.namespace == project.name
            and (r.dry_run or r.verb in WRITE_VERBS)]
    assert sent == [], sent
    assert again.lists and max(again.lists.values()) == 1, again.lists
    plan = CliRunner().invoke(cli, ["plan", str(project.repo), "-p", project.name,
                                    "--exit-code", "--kubeconfig", str(project.fleet.kubeconfig),
                                    "--at", SUNDAY.isoformat()])
    assert plan.exit_code == 0 and "no changes" in plan.output, plan.output


def image(obj: Obj | None) -> str:
    return str((obj or {})["spec"]["template"]["spec"]["containers"][0]["image"])


def test_a_new_image_rolls_out_zone_by_zone_over_real_deployments_and_a_bad_one_halts(
        project: Project) -> None:
    converge(project, lambda r: r.statuses.get(f"PinApp/{project.name}/web", {})
             .get("phase") == "Healthy")
    order = sorted(project.running("web"), key=project.zones.__getitem__)
    assert len({project.zones[c] for c in order}) == 3, order
    edit(project.repo, project.apps, set_image(WEB, "registry.internal/e2e/web:1.1.0"),
         "web 1.1")
    promoted: list[str] = []

    def check_gate(line: str) -> None:
        """At each promotion, every earlier zone is rolled out: its real Deployment has
        observed the new generation with every replica updated and available."""
        if ": rollout web (zone " in line:
            cluster = line.split(":", 1)[0]
            for earlier in order[:order.index(cluster)]:
                live = project.live(earlier, "Deployment", "web") or {}
                status = live["status"]
                assert status["observedGeneration"] >= live["metadata"]["generation"]
                assert status["updatedReplicas"] == live["spec"]["replicas"]
                assert status["availableReplicas"] == live["spec"]["replicas"]
                assert image(live).endswith("web:1.1.0")
            promoted.append(cluster)

    rolled = Pass(project, echo=check_gate)
    assert promoted == order[1:], rolled.lines
    assert rolled.statuses[f"PinApp/{project.name}/web"]["rollout"]["phase"] == "Complete"

    edit(project.repo, project.apps,
         set_image(WEB, "registry.internal/e2e/web:1.2.0-never-ready"), "web 1.2 (broken)")
    started = time.monotonic()
    halted = Pass(project)
    assert time.monotonic() - started >= HEALTH_TIMEOUT  # the zone's health timeout
    web = halted.statuses[f"PinApp/{project.name}/web"]
    assert web["phase"] == "Degraded" and "rollout halted" in web["message"], web
    assert web["rollout"]["zone"] == project.zones[order[0]]
    assert image(project.live(order[0], "Deployment", "web")).endswith("1.2.0-never-ready")
    for later in order[1:]:
        assert image(project.live(later, "Deployment", "web")).endswith("web:1.1.0")


def test_a_replace_waits_until_the_old_job_and_its_pods_are_gone(project: Project) -> None:
    converge(project, lambda r: r.statuses.get(f"PinterestJobSet/{project.name}/batch", {})
             .get("phase") == "Completed")
    (cluster,) = project.running("batch", "Job")
    old = project.live(cluster, "Job", "batch") or {}
    edit(project.repo, project.apps, set_image(BATCH, "registry.internal/e2e/batch:1.1.0"),
         "batch 1.1")
    run = Pass(project)
    assert run.report.ok, run.lines
    assert f"{cluster}: replace Job/{project.name}/batch" in run.lines, run.lines
    new = project.live(cluster, "Job", "batch") or {}
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    assert image(new).endswith("batch:1.1.0")


def set_image(index: int, ref: str) -> Callable[[list[dict[str, Any]]], None]:
    """Set the image of the ``index``-th document of apps.yaml (``WEB``, ``BATCH``)."""
    def change(docs: list[dict[str, Any]]) -> None:
        docs[index]["spec"]["template"]["containers"][0]["image"] = ref
    return change
