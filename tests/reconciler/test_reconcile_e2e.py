"""The reconciler end to end, on a fleet of real control planes (kwok nodes).

The tests run in file order against one fleet and one spec repository: each builds on the
state the previous one left, as passes do in production.
"""

from __future__ import annotations

import json
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from kubernetes import client as k8s

from pincompile.cli import cli
from pincompile.compiler import compile_path
from reconciler.engine import Reconciler
from reconciler.fleet import fleet as fleet_mod
from reconciler.model import PassReport
from reconciler.plan.change import Action
from reconciler.plan.cluster_plan import Options
from reconciler.plan.diff import ANNOTATION_APPLIED
from reconciler.plan.execute import execute
from tests.conftest import api_clients, fleet_of_its_own
from tests.support.fleet import git, spec_repo

pytestmark = pytest.mark.e2e
FIXTURE_REPO = Path(__file__).parent / "fixtures" / "repo"
MEMBERS = ("rt-a", "rt-b", "rt-c")
#: Passes run at an injected instant: a Sunday, outside every scaling window, unless a
#: test says otherwise (the api scaler's window is weekdays 09:00-17:00 Los Angeles time).
SUNDAY = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
MONDAY_10_LA = datetime(2026, 11, 23, 18, 0, tzinfo=UTC)
ZONE = {"rt-a": "rt-east-a", "rt-b": "rt-east-b", "rt-c": "rt-east-c"}
#: web's rollout.healthTimeout (fixtures/repo/apps/shop/web.yaml), seconds: also its
#: Deployments' progressDeadlineSeconds
WEB_HEALTH_TIMEOUT = 30


# --- fixtures -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def rt_fleet(e2e_toolchain: Path) -> Iterator[fleet_mod.FleetState]:
    """Three member clusters (zones a, b, c of one region) and a host, for this module."""
    with fleet_of_its_own(FIXTURE_REPO / "platform", "reconcile") as state:
        yield state


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository holding a copy of ``fixtures/repo``."""
    return spec_repo(FIXTURE_REPO, tmp_path_factory.mktemp("specs") / "repo")


@pytest.fixture(scope="module")
def api(rt_fleet: fleet_mod.FleetState) -> Iterator[Callable[[str], k8s.ApiClient]]:
    with api_clients(rt_fleet.kubeconfig) as get:
        yield get


# --- helpers --------------------------------------------------------------------------------

class Pass:
    """One reconcile pass, in process, with every request counted."""

    def __init__(self, fleet: fleet_mod.FleetState, repo: Path, **options: Any) -> None:
        self.lines: list[str] = []
        self.hooks: list[Callable[[str], None]] = []
        wait = options.pop("wait", True)
        now = options.pop("now", SUNDAY)
        self.reconciler = Reconciler(str(fleet.kubeconfig), options=Options(**options),
                                     wait=wait, timeout=120, echo=self._echo,
                                     clock=lambda: now)
        self.result = compile_path(repo)
        self.report: PassReport = self.reconciler.run(self.result)
        self.writes = Counter({n: c.stats.writes for n, c in self.reconciler.connections.items()})
        self.lists = Counter({(n, r): k for n, c in self.reconciler.connections.items()
                              for r, k in c.stats.lists.items()})
        self.dry_runs = Counter({n: c.stats.by_verb["dry-run"]
                                 for n, c in self.reconciler.connections.items()})
        self.statuses = {"/".join(k): v for k, v in self.reconciler.statuses.items()}
        self.reconciler.close()

    def _echo(self, line: str) -> None:
        self.lines.append(line)
        for hook in self.hooks:
            hook(line)


def at_sunday(fleet: fleet_mod.FleetState) -> list[str]:
    """CLI arguments: this fleet, scaling windows evaluated on a Sunday."""
    return ["--kubeconfig", str(fleet.kubeconfig), "--at", SUNDAY.isoformat()]


def edit(repo: Path, rel: str, change: Callable[[list[dict[str, Any]]], None],
         message: str) -> None:
    path = repo / rel
    docs = list(yaml.safe_load_all(path.read_text()))
    change(docs)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)


def deployment(api: Callable[[str], k8s.ApiClient], cluster: str, name: str) -> Any:
    return k8s.AppsV1Api(api(cluster)).read_namespaced_deployment(name, "shop")


def image_of(api: Callable[[str], k8s.ApiClient], cluster: str, name: str) -> str:
    return str(deployment(api, cluster, name).spec.template.spec.containers[0].image)


def web_clusters(api: Callable[[str], k8s.ApiClient]) -> list[str]:
    out = []
    for cluster in MEMBERS:
        try:
            deployment(api, cluster, "web")
            out.append(cluster)
        except k8s.ApiException:
            continue
    return out


def converge(fleet: fleet_mod.FleetState, repo: Path, want: Callable[[Pass], bool],
             timeout: float = 150.0) -> Pass:
    """Run passes until ``want`` holds (statuses are read from live objects each pass)."""
    deadline = time.monotonic() + timeout
    while True:
        run = Pass(fleet, repo)
        if want(run) or time.monotonic() > deadline:
            return run
        time.sleep(3)


def set_image(image: str) -> Callable[[list[dict[str, Any]]], None]:
    def change(docs: list[dict[str, Any]]) -> None:
        docs[0]["spec"]["template"]["containers"][0]["image"] = image
    return change


# --- 1. apply converges ---------------------------------------------------------------------

def test_apply_makes_every_app_healthy_and_stores_specs_and_status_on_the_host(
        rt_fleet: fleet_mod.FleetState, repo: Path, api: Callable[[str], k8s.ApiClient]
) -> None:
    first = Pass(rt_fleet, repo)
    assert first.report.ok, first.report
    assert sum(len(c.created) for n, c in first.report.clusters.items() if n != "host") == \
        len(first.result.manifests)
    workloads = {"PinApp/shop/web": "Healthy", "PinApp/shop/api": "Healthy",
                 "PinPod/shop/notebook": "Healthy", "PinterestJobSet/shop/batch": "Completed"}
    run = converge(rt_fleet, repo, lambda r: all(
        r.statuses.get(w, {}).get("phase") == phase for w, phase in workloads.items()))
    for name, phase in workloads.items():
        assert run.statuses[name]["phase"] == phase, (name, run.statuses[name])
    web = run.statuses["PinApp/shop/web"]
    shares = {c["name"]: c["replicas"] for c in web["clusters"]}
    assert sorted(shares) == sorted(web_clusters(api)) and sum(shares.values()) == 3
    assert web["ready"] == "3/3"
    # the host holds every spec, each workload with the status just computed
    custom = k8s.CustomObjectsApi(api("host"))
    stored = {(kind, o["metadata"]["name"]): o for kind in ("pinapps", "pinpods",
              "pinterestjobsets", "pinscalers")
              for o in custom.list_namespaced_custom_object(
                  "pincompute.io", "v1", "shop", kind)["items"]}
    assert set(stored) == {("pinapps", "web"), ("pinapps", "api"), ("pinpods", "notebook"),
                           ("pinterestjobsets", "batch"), ("pinscalers", "api")}
    assert stored[("pinapps", "web")]["status"]["phase"] == "Healthy"
    assert stored[("pinapps", "web")]["spec"]["replicas"] == 3
    clusters = custom.list_cluster_custom_object("pincompute.io", "v1", "clusters")["items"]
    assert sorted(c["metadata"]["name"] for c in clusters) == list(MEMBERS)


# --- 2. a pass with nothing to do writes nothing --------------------------------------------

def test_second_pass_makes_zero_writes_and_one_list_per_kind(
        rt_fleet: fleet_mod.FleetState, repo: Path) -> None:
    run = Pass(rt_fleet, repo)
    assert run.report.ok
    assert sum(run.writes.values()) == 0, (run.writes, run.lines)
    assert run.lists and max(run.lists.values()) == 1, run.lists
    # every object's record answers: no dry-run (PriorityClasses, whose `globalDefault:
    # false` the server leaves out, were dry-run in every pass)
    assert sum(run.dry_runs.values()) == 0, run.dry_runs
    members = [c for n, c in run.report.clusters.items() if n != "host"]
    assert sum(c.unchanged for c in members) == len(run.result.manifests)
    cli_run = CliRunner().invoke(cli, ["plan", str(repo), "--exit-code",
                                       *at_sunday(rt_fleet)])
    assert cli_run.exit_code == 0, cli_run.output
    assert "no changes" in cli_run.output


def test_a_warm_watch_cache_answers_a_pass_without_any_list(
        rt_fleet: fleet_mod.FleetState, repo: Path) -> None:
    reconciler = Reconciler(str(rt_fleet.kubeconfig), watch=True, wait=False,
                            clock=lambda: SUNDAY)
    try:
        result = compile_path(repo)
        assert reconciler.run(result).ok
        for conn in reconciler.connections.values():
            conn.stats.reset()
        report = reconciler.run(result)
        assert report.ok
        lists = {n: sum(c.stats.lists.values()) for n, c in reconciler.connections.items()
                 if n != "host"}
        assert sorted(lists) == list(MEMBERS) and set(lists.values()) == {0}, lists
        assert sum(c.stats.writes for c in reconciler.connections.values()) == 0
        assert sum(reconciler.connections["host"].stats.lists.values()) == 0
    finally:
        reconciler.close()


def test_a_push_that_changes_one_app_writes_only_that_apps_objects_and_status(
        rt_fleet: fleet_mod.FleetState, repo: Path, api: Callable[[str], k8s.ApiClient]
) -> None:
    reconciler = Reconciler(str(rt_fleet.kubeconfig), watch=True, wait=False,
                            clock=lambda: SUNDAY)
    try:
        before = compile_path(repo)
        assert reconciler.run(before).ok
        edit(repo, "apps/shop/api.yaml", lambda docs: docs[0]["spec"]["template"][
            "containers"][0].update(image="registry.internal/shop/api:2.0.1"), "api 2.0.1")
        after = compile_path(repo)
        for conn in reconciler.connections.values():
            conn.stats.reset()
        report = reconciler.run(after)
        assert report.ok, report
        written = [ref for name, c in report.clusters.items() if name != "host"
                   for ref in [*c.created, *c.updated, *c.replaced, *c.pruned]]
        api_clusters = [c for c in MEMBERS if _has(api, c, "api")]
        assert sorted((r.cluster, r.kind, r.name) for r in written) == \
            [(c, "Deployment", "api") for c in api_clusters]
        members: Counter[str] = Counter()
        for name, conn in reconciler.connections.items():
            if name != "host":
                members.update(conn.stats.writes_by_resource)
        assert members == {"deployments": len(api_clusters)}, members
        # on the host: the app's resource (its new compiled digest), its status, one Event
        host = reconciler.connections["host"].stats
        assert host.writes_by_resource == {"pinapps": 2, "events": 1}, host.writes_by_resource
        assert sum(host.lists.values()) == 0
        statuses = {"/".join(k): v for k, v in reconciler.statuses.items()}
        assert statuses["PinApp/shop/api"]["observedRevision"] == after.revision
        assert {c["observedRevision"] for c in statuses["PinApp/shop/api"]["clusters"]} \
            == {after.revision}
        for untouched in ("PinApp/shop/web", "PinScaler/shop/api", "PinPod/shop/notebook"):
            assert statuses[untouched]["observedRevision"] not in ("", after.revision)
    finally:
        reconciler.close()


# --- 3. zone by zone ------------------------------------------------------------------------

def test_new_image_rolls_out_zone_by_zone_and_a_bad_one_halts_after_the_first_zone(
        rt_fleet: fleet_mod.FleetState, repo: Path, api: Callable[[str], k8s.ApiClient]
) -> None:
    clusters = web_clusters(api)
    order = sorted(clusters, key=lambda c: ZONE[c])
    assert len(order) == 3
    edit(repo, "apps/shop/web.yaml", set_image("registry.internal/shop/web:1.1.0"), "web 1.1")
    gates: list[tuple[str, list[str]]] = []

    def check_gate(line: str) -> None:
        # when a zone is promoted, every earlier zone must be fully rolled out already
        if ": rollout web (zone " in line:
            cluster = line.split(":", 1)[0]
            earlier = [c for c in order if ZONE[c] < ZONE[cluster]]
            for c in earlier:
                d = deployment(api, c, "web")
                assert d.status.observed_generation >= d.metadata.generation
                assert d.status.updated_replicas == d.spec.replicas
                assert d.status.available_replicas == d.spec.replicas
                assert d.spec.template.spec.containers[0].image.endswith("web:1.1.0")
            gates.append((cluster, earlier))

    run = Pass.__new__(Pass)
    run.lines, run.hooks = [], [check_gate]
    run.reconciler = Reconciler(str(rt_fleet.kubeconfig), wait=True, timeout=120,
                                echo=run._echo, clock=lambda: SUNDAY)
    run.report = run.reconciler.run(compile_path(repo))
    statuses = {"/".join(k): v for k, v in run.reconciler.statuses.items()}
    run.reconciler.close()
    assert [g[0] for g in gates] == order[1:], run.lines
    assert all(image_of(api, c, "web").endswith("web:1.1.0") for c in order)
    assert statuses["PinApp/shop/web"]["rollout"]["phase"] == "Complete"

    # an image that never becomes Ready halts after the first zone
    edit(repo, "apps/shop/web.yaml",
         set_image("registry.internal/shop/web:1.2.0-never-ready"), "web 1.2 (broken)")
    started = time.monotonic()
    halted = Pass(rt_fleet, repo)
    assert time.monotonic() - started >= WEB_HEALTH_TIMEOUT  # the zone's health timeout
    web = halted.statuses["PinApp/shop/web"]
    assert web["phase"] == "Degraded" and "rollout halted" in web["message"], web
    assert web["rollout"]["phase"] == "Halted" and web["rollout"]["zone"] == ZONE[order[0]]
    assert image_of(api, order[0], "web").endswith("1.2.0-never-ready")
    for later in order[1:]:
        assert image_of(api, later, "web").endswith("web:1.1.0")
    events = k8s.CoreV1Api(api("host")).list_namespaced_event("shop").items
    reasons = {e.reason for e in events if e.involved_object.name == "web"}
    assert {"ZonePromoted", "RolloutHalted"} <= reasons

    # a restarted reconciler keeps the halt: later zones untouched, no waiting again
    again = Pass(rt_fleet, repo)
    assert again.statuses["PinApp/shop/web"]["rollout"]["phase"] == "Halted"
    for later in order[1:]:
        assert again.writes[later] == 0
        assert image_of(api, later, "web").endswith("web:1.1.0")

    # a fixed image starts again from the first zone and rolls out everywhere
    edit(repo, "apps/shop/web.yaml", set_image("registry.internal/shop/web:1.3.0"), "fix")
    fixed = Pass(rt_fleet, repo)
    assert fixed.statuses["PinApp/shop/web"]["rollout"]["phase"] == "Complete", fixed.lines
    assert all(image_of(api, c, "web").endswith("web:1.3.0") for c in order)
    assert fixed.statuses["PinApp/shop/web"]["phase"] == "Healthy"


# --- 4. prune --------------------------------------------------------------------------------

def test_removed_app_is_pruned_but_unmanaged_lookalikes_are_not_and_mass_prunes_refused(
        rt_fleet: fleet_mod.FleetState, repo: Path, api: Callable[[str], k8s.ApiClient]
) -> None:
    core = k8s.CoreV1Api(api("rt-b"))
    core.create_namespaced_config_map("shop", k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(
        name="batch-notes", labels={"pincompute.io/app": "batch",
                                    "pincompute.io/project": "shop"})))
    batch = k8s.BatchV1Api(api("rt-b"))
    assert [j.metadata.name for j in batch.list_namespaced_job("shop").items]
    (repo / "apps/shop/batch.yaml").unlink()
    git(repo, "commit", "-qam", "retire batch")
    run = Pass(rt_fleet, repo)
    pruned = {str(r) for r in run.report.clusters["rt-b"].pruned}
    assert any(p.startswith("Job/shop/") for p in pruned), run.lines
    deadline = time.monotonic() + 30
    while batch.list_namespaced_job("shop").items and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not batch.list_namespaced_job("shop").items
    assert core.read_namespaced_config_map("batch-notes", "shop").metadata.labels
    # removing almost everything at once is refused above --max-prune
    for rel in ("apps/shop/web.yaml", "apps/shop/api.yaml", "apps/shop/notebook.yaml"):
        (repo / rel).unlink()
    git(repo, "commit", "-qam", "oops: delete the shop")
    refused = CliRunner().invoke(cli, ["apply", str(repo), "--max-prune", "20%", "--no-wait",
                                       *at_sunday(rt_fleet)])
    # a held prune is not convergence: exit 1, and the pass ends saying what is left
    assert refused.exit_code == 1, refused.output
    assert "0 pruned" in refused.output
    tail = refused.output[refused.output.index("NOT CONVERGED"):]
    assert "prune held" in tail and "would be pruned, over --max-prune 20%" in tail, tail
    assert deployment(api, web_clusters(api)[0], "web")
    git(repo, "revert", "--no-edit", "HEAD")
    restored = Pass(rt_fleet, repo)
    assert restored.report.ok and sum(restored.writes.values()) - restored.writes["host"] == 0


# --- 5. drift from another field manager ------------------------------------------------------

def test_drift_is_shown_and_restored_and_other_managers_fields_stay(
        rt_fleet: fleet_mod.FleetState, repo: Path, api: Callable[[str], k8s.ApiClient]
) -> None:
    cluster = web_clusters(api)[0]
    apps = k8s.AppsV1Api(api(cluster))
    apps.patch_namespaced_deployment(
        "web", "shop", {"metadata": {"labels": {"oncall-note": "paged"}},
                        "spec": {"progressDeadlineSeconds": 999}},
        field_manager="kubectl-edit")
    plan = CliRunner().invoke(cli, ["plan", str(repo), "--cluster", cluster, "--exit-code",
                                    *at_sunday(rt_fleet)])
    assert plan.exit_code == 1, plan.output
    assert "update    Deployment/shop/web" in plan.output
    assert "-  progressDeadlineSeconds: 999" in plan.output
    assert f"+  progressDeadlineSeconds: {WEB_HEALTH_TIMEOUT}" in plan.output
    Pass(rt_fleet, repo)
    live = deployment(api, cluster, "web")
    assert live.spec.progress_deadline_seconds == WEB_HEALTH_TIMEOUT
    assert live.metadata.labels["oncall-note"] == "paged"


def test_a_label_and_an_annotation_changed_by_another_manager_are_found_and_restored(
        rt_fleet: fleet_mod.FleetState, repo: Path, api: Callable[[str], k8s.ApiClient]
) -> None:
    cluster = web_clusters(api)[0]
    core = k8s.CoreV1Api(api(cluster))
    before = Pass(rt_fleet, repo, wait=False)
    assert before.writes[cluster] == 0, before.lines  # converged before the change
    core.patch_namespaced_service(
        "web", "shop", {"metadata": {"labels": {"pincompute.io/tier": "reserved"},
                                     "annotations": {"pincompute.io/source": "x.yaml"}}},
        field_manager="kubectl-label")
    plan = CliRunner().invoke(cli, ["plan", str(repo), "--cluster", cluster, "--exit-code",
                                    *at_sunday(rt_fleet)])
    assert plan.exit_code == 1, plan.output
    assert "update    Service/shop/web" in plan.output
    assert "-    pincompute.io/tier: reserved" in plan.output
    assert "+    pincompute.io/tier: ondemand" in plan.output
    assert "-    pincompute.io/source: x.yaml" in plan.output
    assert "+    pincompute.io/source: apps/shop/web.yaml" in plan.output
    run = Pass(rt_fleet, repo, wait=False)
    assert f"{cluster}: update Service/shop/web" in run.lines, run.lines
    meta = core.read_namespaced_service("web", "shop").metadata
    assert meta.labels["pincompute.io/tier"] == "ondemand"
    assert meta.annotations["pincompute.io/source"] == "apps/shop/web.yaml"


def test_a_record_is_not_written_over_a_change_made_after_the_plan(
        rt_fleet: fleet_mod.FleetState, repo: Path, api: Callable[[str], k8s.ApiClient]
) -> None:
    """An unchanged object whose record is gone is applied once more only to record it,
    and only while it is the object the plan read: another manager's write in between
    (a new resourceVersion) leaves it alone, to be planned afresh by the next pass."""
    cluster = web_clusters(api)[0]
    core = k8s.CoreV1Api(api(cluster))
    record = "/metadata/annotations/" + ANNOTATION_APPLIED.replace("/", "~1")
    core.patch_namespaced_service("web", "shop", [{"op": "remove", "path": record}])
    lines: list[str] = []
    reconciler = Reconciler(str(rt_fleet.kubeconfig), clusters=[cluster], echo=lines.append,
                            clock=lambda: SUNDAY)
    try:
        member = reconciler.plan(compile_path(repo))[cluster]
        assert member.plan is not None and member.conn is not None
        assert [c.name for c in member.plan.restamps] == ["Service/shop/web"], lines
        assert member.plan.pending == []
        core.patch_namespaced_service("web", "shop", {"metadata": {"labels": {
            "oncall-team": "edge"}}}, field_manager="kubectl-label")
        done = execute(member.conn, member.plan, echo=lines.append)
    finally:
        reconciler.close()
    assert done[Action.UNCHANGED] == [], lines
    assert f"{cluster}: not recorded Service/shop/web: changed since it was planned " \
           "(the next pass looks at it again)" in lines
    meta = core.read_namespaced_service("web", "shop").metadata
    assert ANNOTATION_APPLIED not in (meta.annotations or {})
    assert meta.labels["oncall-team"] == "edge"
    again = Pass(rt_fleet, repo, wait=False)
    assert f"{cluster}: recorded Service/shop/web" in again.lines, again.lines
    assert again.writes[cluster] == 1, again.lines
    meta = core.read_namespaced_service("web", "shop").metadata
    assert ANNOTATION_APPLIED in meta.annotations and meta.labels["oncall-team"] == "edge"
    core.patch_namespaced_service("web", "shop", {"metadata": {"labels": {
        "oncall-team": None}}}, field_manager="kubectl-label")


# --- 6. an unreachable cluster ----------------------------------------------------------------

def test_unreachable_cluster_is_reported_and_the_others_converge(
        rt_fleet: fleet_mod.FleetState, repo: Path, api: Callable[[str], k8s.ApiClient]
) -> None:
    (repo / "apps/shop/extra.yaml").write_text(
        (repo / "apps/shop/web.yaml").read_text().replace("name: web", "name: extra")
        .replace("zone-by-zone", "all-at-once"))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "extra app")
    fleet_mod.stop_component(rt_fleet, "rt-c", "kube-apiserver")
    try:
        run = CliRunner().invoke(cli, ["apply", str(repo), "--timeout", "60",
                                       *at_sunday(rt_fleet)])
        assert run.exit_code == 3, run.output
        assert "rt-c: FAILED" in run.output
        for cluster in ("rt-a", "rt-b"):
            assert deployment(api, cluster, "extra").spec.replicas == 1
        row = next(line for line in run.output.splitlines()
                   if line.startswith("PinApp/shop/extra"))
        assert "rt-c=?" in row
    finally:
        fleet_mod.start_component(rt_fleet, "rt-c", "kube-apiserver")
    again = Pass(rt_fleet, repo)
    assert again.report.ok
    assert deployment(api, "rt-c", "extra").spec.replicas == 1


# --- 7. a spec error anywhere writes nothing anywhere -------------------------------------------

def test_spec_error_anywhere_means_no_write_to_any_cluster(
        rt_fleet: fleet_mod.FleetState, repo: Path) -> None:
    broken = repo / "apps/shop/notebook.yaml"
    good = broken.read_text()
    broken.write_text(good.replace("cpu: \"1\"", "cpu: lots"))
    try:
        result = compile_path(repo)
        assert not result.ok
        reconciler = Reconciler(str(rt_fleet.kubeconfig))
        report = reconciler.run(result)
        assert report.error and not report.clusters
        assert reconciler.connections == {}  # not one request was sent
        cli_run = CliRunner().invoke(cli, ["apply", str(repo), *at_sunday(rt_fleet)])
        assert cli_run.exit_code == 1
        assert "notebook.yaml:" in cli_run.output and "nothing was applied" in cli_run.output
    finally:
        broken.write_text(good)


# --- 8. PinPod: an image change is made in place ----------------------------------------------

def test_pinpod_sidecar_upgrade_keeps_the_pod_and_its_main_container(
        rt_fleet: fleet_mod.FleetState, repo: Path, api: Callable[[str], k8s.ApiClient]
) -> None:
    core = k8s.CoreV1Api(api("rt-a"))
    before = core.read_namespaced_pod("notebook", "shop")
    edit(repo, "platform/sidecars/logging.yaml", lambda d: d[0]["spec"]["container"].update(
        image="registry.internal/log-shipper:2.3.0"), "logging 2.3")
    run = Pass(rt_fleet, repo)
    assert "rt-a: update Pod/shop/notebook" in run.lines, run.lines
    after = core.read_namespaced_pod("notebook", "shop")
    assert after.metadata.uid == before.metadata.uid
    assert after.spec.containers[0].image == before.spec.containers[0].image
    sidecars = [c.image for c in (after.spec.init_containers or []) + after.spec.containers]
    assert "registry.internal/log-shipper:2.3.0" in sidecars


# --- 9. an autoscaled app's replicas belong to its HPA ------------------------------------------

def test_replicas_changed_by_the_autoscaler_are_left_alone(
        rt_fleet: fleet_mod.FleetState, repo: Path, api: Callable[[str], k8s.ApiClient]
) -> None:
    cluster = next(c for c in MEMBERS if _has(api, c, "api"))
    hpa = k8s.AutoscalingV2Api(api(cluster)).read_namespaced_horizontal_pod_autoscaler(
        "api", "shop")
    apps = k8s.AppsV1Api(api(cluster))
    start = apps.read_namespaced_deployment("api", "shop").spec.replicas
    # it started at its share (6 replicas over 2 clusters), not at the HPA's minimum (2)
    assert (start, hpa.spec.min_replicas, hpa.spec.max_replicas) == (3, 2, 4)
    target = hpa.spec.max_replicas
    assert target != start
    apps.patch_namespaced_deployment_scale("api", "shop", {"spec": {"replicas": target}},
                                           field_manager="horizontal-pod-autoscaler")
    run = Pass(rt_fleet, repo, wait=False)
    assert run.writes[cluster] == 0, run.lines
    assert apps.read_namespaced_deployment("api", "shop").spec.replicas == target


def test_an_app_that_gets_a_scaler_keeps_its_replicas_handed_to_their_own_manager(
        rt_fleet: fleet_mod.FleetState, repo: Path, api: Callable[[str], k8s.ApiClient]
) -> None:
    """With the scaler pincompile stops setting the replicas the HPA now owns; first it
    hands them over (a pass reads lean LISTs, without managedFields: the handover GETs
    them), then applies the app's other change. The pass after it sends nothing."""
    original = (repo / "apps/shop/web.yaml").read_text()
    edit(repo, "apps/shop/web.yaml", lambda d: d[0]["spec"].update(replicas=6), "web x6")
    Pass(rt_fleet, repo)
    clusters = web_clusters(api)
    assert {deployment(api, c, "web").spec.replicas for c in clusters} == {2}
    changed = original.replace("replicas: 3", "replicas: 6").replace(
        "healthTimeout: 30s", "healthTimeout: 45s")  # a change outside the pod template
    (repo / "apps/shop/web.yaml").write_text(changed + web_scaler(6))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "web autoscaled")
    try:
        run = Pass(rt_fleet, repo, wait=False)
        assert run.report.ok, run.lines
        for cluster in clusters:
            live = deployment(api, cluster, "web")
            assert (live.spec.replicas, replicas_owners(live)) == (
                2, ["pincompile-initial-replicas"])
            assert live.spec.progress_deadline_seconds == 45
        again = Pass(rt_fleet, repo, wait=False)
        assert all(again.writes[c] == 0 for c in MEMBERS), again.lines
        assert all(again.dry_runs[c] == 0 for c in MEMBERS), (again.dry_runs, again.lines)
    finally:
        (repo / "apps/shop/web.yaml").write_text(original)
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "web as it was")
        Pass(rt_fleet, repo)


def web_scaler(floor: int) -> str:
    """A cpu PinScaler of ``shop/web`` from ``floor`` to 9 replicas, as a YAML document."""
    return ("---\napiVersion: pincompute.io/v1\nkind: PinScaler\n"
            "metadata: {name: web, project: shop}\n"
            f"spec:\n  target: web\n  minReplicas: {floor}\n  maxReplicas: 9\n"
            "  metrics: [{type: cpu, targetUtilization: 60}]\n")


def replicas_owners(live: Any) -> list[str]:
    """The field managers of a live Deployment's ``spec.replicas``."""
    return [m.manager for m in live.metadata.managed_fields
            if "f:replicas" in ((m.fields_v1 or {}).get("f:spec") or {})]


def test_a_scaler_added_alone_costs_its_pass_and_the_next_pass_nothing(
        rt_fleet: fleet_mod.FleetState, repo: Path, api: Callable[[str], k8s.ApiClient]
) -> None:
    """A PinScaler added with nothing else changed: its pass creates the HPAs and hands the
    Deployments' replicas to their own manager, recording what it applied (the dry-run
    alone found nothing to change: before, the record stayed stale and every later pass
    dry-ran the Deployments); the pass after it writes nothing and dry-runs nothing."""
    original = (repo / "apps/shop/web.yaml").read_text()
    clusters = web_clusters(api)
    before = {c: deployment(api, c, "web").spec.replicas for c in clusters}
    (repo / "apps/shop/web.yaml").write_text(original + web_scaler(3))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "web autoscaled, nothing else changed")
    try:
        added = Pass(rt_fleet, repo, wait=False)
        assert added.report.ok, added.lines
        for cluster in clusters:
            live = deployment(api, cluster, "web")
            assert (live.spec.replicas, replicas_owners(live)) == (
                before[cluster], ["pincompile-initial-replicas"])
        again = Pass(rt_fleet, repo, wait=False)
        assert all(again.writes[c] == 0 for c in MEMBERS), again.lines
        assert all(again.dry_runs[c] == 0 for c in MEMBERS), (again.dry_runs, again.lines)
    finally:
        (repo / "apps/shop/web.yaml").write_text(original)
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "web as it was")
        Pass(rt_fleet, repo)


def test_a_scaling_window_raises_every_clusters_floor_by_its_share_and_closing_restores_it(
        rt_fleet: fleet_mod.FleetState, repo: Path, api: Callable[[str], k8s.ApiClient]
) -> None:
    clusters = [c for c in MEMBERS if _has(api, c, "api")]

    def floors() -> list[int]:
        return [k8s.AutoscalingV2Api(api(c)).read_namespaced_horizontal_pod_autoscaler(
            "api", "shop").spec.min_replicas for c in clusters]

    assert floors() == [2, 2]
    opened = Pass(rt_fleet, repo, now=MONDAY_10_LA, wait=False)
    assert floors() == [4, 4]  # 8 over two clusters
    scaler = opened.statuses["PinScaler/shop/api"]
    assert scaler["floor"] == 8 and scaler["activeSchedule"].startswith("0 9 * * 1-5")
    assert "until 2026-11-24T01:00:00Z" in scaler["activeSchedule"]
    steady = Pass(rt_fleet, repo, now=MONDAY_10_LA, wait=False)
    assert sum(steady.writes.values()) - steady.writes["host"] == 0
    closed = Pass(rt_fleet, repo, wait=False)
    assert floors() == [2, 2]
    assert closed.statuses["PinScaler/shop/api"]["floor"] == 4
    assert "activeSchedule" not in closed.statuses["PinScaler/shop/api"]


def _has(api: Callable[[str], k8s.ApiClient], cluster: str, name: str) -> bool:
    try:
        deployment(api, cluster, name)
    except k8s.ApiException:
        return False
    return True


# --- 10. an immutable field makes a replace ---------------------------------------------------

def test_changed_jobset_template_is_a_replace(
        rt_fleet: fleet_mod.FleetState, repo: Path, api: Callable[[str], k8s.ApiClient]
) -> None:
    shutil.copy(FIXTURE_REPO / "apps/shop/batch.yaml", repo / "apps/shop/batch.yaml")
    git(repo, "add", "-A")
    git(repo, "commit", "--allow-empty", "-qm", "batch again")  # step 4 retired it (if it ran)
    Pass(rt_fleet, repo, wait=False)
    batch = k8s.BatchV1Api(api("rt-b"))
    (old,) = batch.list_namespaced_job("shop").items
    edit(repo, "apps/shop/batch.yaml", set_image("registry.internal/shop/batch:1.1.0"),
         "batch 1.1")
    plan = CliRunner().invoke(cli, ["plan", str(repo), "--cluster", "rt-b",
                                    *at_sunday(rt_fleet)])
    assert f"replace   Job/shop/{old.metadata.name}" in plan.output, plan.output
    Pass(rt_fleet, repo, wait=False)
    (new,) = batch.list_namespaced_job("shop").items
    assert new.metadata.uid != old.metadata.uid
    assert new.spec.template.spec.containers[-1].image.endswith("batch:1.1.0") or any(
        c.image.endswith("batch:1.1.0") for c in new.spec.template.spec.containers)


# --- 11. an unmanaged object holding a desired name ---------------------------------------------

def test_unmanaged_object_is_a_conflict_until_adopted(
        rt_fleet: fleet_mod.FleetState, repo: Path, api: Callable[[str], k8s.ApiClient]
) -> None:
    cluster = web_clusters(api)[0]
    core = k8s.CoreV1Api(api(cluster))
    core.create_namespaced_service("shop", k8s.V1Service(
        metadata=k8s.V1ObjectMeta(name="cart", labels={"owner": "someone-else"}),
        spec=k8s.V1ServiceSpec(selector={"app": "cart"},
                               ports=[k8s.V1ServicePort(port=80, target_port=9090)])))
    (repo / "apps/shop/cart.yaml").write_text(
        (repo / "apps/shop/web.yaml").read_text().replace("name: web", "name: cart"))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "cart")
    run = CliRunner().invoke(cli, ["apply", str(repo), "--timeout", "60",
                                   *at_sunday(rt_fleet)])
    assert run.exit_code == 1, run.output
    assert (f"{cluster}: conflict Service/shop/cart: held by an object pincompile does not "
            "manage (field manager ") in run.output, run.output
    svc = core.read_namespaced_service("cart", "shop")
    assert "app.kubernetes.io/managed-by" not in (svc.metadata.labels or {})
    assert svc.spec.ports[0].target_port == 9090
    adopted = CliRunner().invoke(cli, ["apply", str(repo), "--adopt", "--timeout", "60",
                                       *at_sunday(rt_fleet)])
    assert adopted.exit_code == 0, adopted.output
    assert "NOT CONVERGED" not in adopted.output
    svc = core.read_namespaced_service("cart", "shop")
    assert svc.metadata.labels["app.kubernetes.io/managed-by"] == "pincompile"
    assert svc.spec.ports[0].target_port == 8080


NEWCOMER = """apiVersion: pincompute.io/v1
kind: PinterestService
metadata: {name: newcomer, project: shop}
spec:
  replicas: 1
  tier: ondemand
  template:
    containers:
      - name: main
        image: registry.internal/shop/newcomer:1.0.0
        resources: {cpu: 100m, memory: 64Mi}
  placement: {regions: [rt-east], spread: cluster, maxClusters: 1}
  rollout: {strategy: all-at-once}
"""


def test_a_name_held_with_another_selector_is_a_conflict_until_adopted_by_replace(
        rt_fleet: fleet_mod.FleetState, repo: Path, api: Callable[[str], k8s.ApiClient]
) -> None:
    Pass(rt_fleet, repo, wait=False)  # namespace shop exists (when run alone, too)
    (repo / "apps/shop/newcomer.yaml").write_text(NEWCOMER)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "newcomer")
    (cluster,) = {m.cluster for m in compile_path(repo).manifests
                  if m.kind == "Deployment" and m.name == "newcomer"}
    apps = k8s.AppsV1Api(api(cluster))
    labels = {"app": "legacy-newcomer"}
    apps.create_namespaced_deployment("shop", k8s.V1Deployment(
        metadata=k8s.V1ObjectMeta(name="newcomer", labels={"owner": "legacy"}),
        spec=k8s.V1DeploymentSpec(
            replicas=1, selector=k8s.V1LabelSelector(match_labels=labels),
            template=k8s.V1PodTemplateSpec(
                metadata=k8s.V1ObjectMeta(labels=labels),
                spec=k8s.V1PodSpec(containers=[k8s.V1Container(
                    name="legacy", image="registry.internal/legacy:1")])))),
        field_manager="legacy-deployer")
    legacy_uid = apps.read_namespaced_deployment("newcomer", "shop").metadata.uid
    why = ("conflict Deployment/shop/newcomer: held by an object pincompile does not manage "
           "(field manager legacy-deployer")

    plan = CliRunner().invoke(cli, ["plan", str(repo), "--cluster", cluster, "--exit-code",
                                    *at_sunday(rt_fleet)])
    assert plan.exit_code == 1, plan.output
    assert "conflict  Deployment/shop/newcomer  (held by an object pincompile does not " \
           "manage (field manager legacy-deployer" in plan.output, plan.output
    assert "spec.selector differs and cannot change in place" in plan.output

    run = CliRunner().invoke(cli, ["apply", str(repo), "--timeout", "60",
                                   *at_sunday(rt_fleet)])
    assert run.exit_code == 1, run.output
    tail = run.output[run.output.index("NOT CONVERGED"):]
    assert f"{cluster}: {why}" in tail and "spec.selector differs" in tail, tail
    assert apps.read_namespaced_deployment("newcomer", "shop").metadata.uid == legacy_uid
    shown = CliRunner().invoke(cli, ["status", "PinterestService/shop/newcomer", "-o", "json",
                                     "--kubeconfig", str(rt_fleet.kubeconfig)])
    (row,) = json.loads(shown.output)["items"]
    assert row["phase"] == "Degraded", row
    assert "conflict: held by an object pincompile does not manage (field manager " \
           "legacy-deployer" in row["message"]
    assert "spec.selector differs" in row["message"]

    adopted = CliRunner().invoke(cli, ["apply", str(repo), "--adopt", "--timeout", "60",
                                       *at_sunday(rt_fleet)])
    assert adopted.exit_code == 0, adopted.output
    assert f"{cluster}: recreating Deployment/shop/newcomer (delete, then create): adopted: " \
           "spec.selector cannot change in place" in adopted.output, adopted.output
    live = apps.read_namespaced_deployment("newcomer", "shop")
    assert live.metadata.uid != legacy_uid
    assert live.metadata.labels["app.kubernetes.io/managed-by"] == "pincompile"
    assert live.spec.selector.match_labels != labels
    again = Pass(rt_fleet, repo, wait=False)
    assert again.report.converged and again.writes[cluster] == 0, again.lines


def test_an_object_the_api_server_rejects_leaves_the_pass_unconverged(
        rt_fleet: fleet_mod.FleetState, repo: Path, api: Callable[[str], k8s.ApiClient]
) -> None:
    (cluster,) = {m.cluster for m in compile_path(repo).manifests
                  if m.kind == "Deployment" and m.name == "newcomer"}
    admission = k8s.AdmissionregistrationV1Api(api(cluster))
    admission.create_validating_admission_policy(k8s.V1ValidatingAdmissionPolicy(
        metadata=k8s.V1ObjectMeta(name="no-v2"),
        spec=k8s.V1ValidatingAdmissionPolicySpec(
            failure_policy="Fail",
            match_constraints=k8s.V1MatchResources(resource_rules=[
                k8s.V1NamedRuleWithOperations(api_groups=["apps"], api_versions=["v1"],
                                              operations=["CREATE", "UPDATE"],
                                              resources=["deployments"])]),
            validations=[k8s.V1Validation(
                expression="!object.spec.template.spec.containers.exists(c, "
                           "c.image.endsWith(':2.0.0-banned'))",
                message="images tagged 2.0.0-banned are not allowed here")])))
    admission.create_validating_admission_policy_binding(
        k8s.V1ValidatingAdmissionPolicyBinding(
            metadata=k8s.V1ObjectMeta(name="no-v2"),
            spec=k8s.V1ValidatingAdmissionPolicyBindingSpec(policy_name="no-v2",
                                                            validation_actions=["Deny"])))
    try:
        _wait_enforced(k8s.AppsV1Api(api(cluster)))
        edit(repo, "apps/shop/newcomer.yaml",
             set_image("registry.internal/shop/newcomer:2.0.0-banned"), "newcomer 2")
        run = CliRunner().invoke(cli, ["apply", str(repo), "--no-wait", *at_sunday(rt_fleet)])
        assert run.exit_code == 1, run.output
        tail = run.output[run.output.index("NOT CONVERGED"):]
        assert "(1 rejected)" in tail and f"{cluster}: rejected Deployment/shop/newcomer: " in tail
        assert "images tagged 2.0.0-banned are not allowed here" in tail, tail
        image = k8s.AppsV1Api(api(cluster)).read_namespaced_deployment(
            "newcomer", "shop").spec.template.spec.containers[0].image
        assert image.endswith("newcomer:1.0.0")
    finally:
        admission.delete_validating_admission_policy_binding("no-v2")
        admission.delete_validating_admission_policy("no-v2")
        (repo / "apps/shop/newcomer.yaml").unlink()
        git(repo, "commit", "-qam", "no newcomer")


def _wait_enforced(apps: k8s.AppsV1Api, timeout: float = 30.0) -> None:
    """Until the API server enforces the new admission policy (it loads them async)."""
    probe = k8s.V1Deployment(
        metadata=k8s.V1ObjectMeta(name="policy-probe"),
        spec=k8s.V1DeploymentSpec(
            selector=k8s.V1LabelSelector(match_labels={"app": "probe"}),
            template=k8s.V1PodTemplateSpec(
                metadata=k8s.V1ObjectMeta(labels={"app": "probe"}),
                spec=k8s.V1PodSpec(containers=[k8s.V1Container(
                    name="c", image="registry.internal/probe:2.0.0-banned")]))))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            apps.create_namespaced_deployment("shop", probe, dry_run="All")
        except k8s.ApiException:
            return
        time.sleep(0.5)
    raise AssertionError("the admission policy was not enforced in time")
