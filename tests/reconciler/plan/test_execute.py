"""Carrying a plan out on clusters held in memory: a re-record only over the object the
plan read (its resourceVersion as precondition), and an autoscaled workload's replicas
left to its HPA, handed to a field manager of their own before pincompile stops setting
them."""

from __future__ import annotations

from pathlib import Path

from pincompile.compiler import compile_path
from reconciler.clients.access import FIELD_MANAGER
from reconciler.engine import Reconciler
from reconciler.model import Obj
from reconciler.plan.change import Action
from reconciler.plan.diff import ANNOTATION_APPLIED
from reconciler.plan.execute import INITIAL_REPLICAS_MANAGER, execute
from tests.support.fake_passes import (
    MEMBERS,
    SUNDAY,
    FakePass,
    clusters_running,
    commit,
    edit,
    fake_fleet,
    live,
    spec_repo,
)
from tests.support.kube_fake import FakeFleet

DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment"}



def service(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": "shop"}}


def replicas_owners(obj: Obj | None) -> list[str]:
    """The field managers of a Deployment's ``spec.replicas``."""
    return [m["manager"] for m in (obj or {})["metadata"].get("managedFields") or []
            if "f:replicas" in ((m.get("fieldsV1") or {}).get("f:spec") or {})]


def assert_handed_over_with_the_update(fleet: FakeFleet, name: str, clusters: list[str],
                                       replicas: int) -> None:
    """Each of ``name``'s Deployments still runs ``replicas``, owned by their own manager,
    and carries the update (a 45 s health timeout) applied beside the hand-over."""
    for cluster in clusters:
        obj = live(fleet, cluster, "Deployment", name) or {}
        assert (obj["spec"]["replicas"], replicas_owners(obj)) == (
            replicas, [INITIAL_REPLICAS_MANAGER]), cluster
        assert obj["spec"]["progressDeadlineSeconds"] == 45, cluster


def test_a_record_is_not_written_over_a_change_made_after_the_plan(
        converged: tuple[FakeFleet, Path]) -> None:
    """An unchanged object whose record is gone is applied once more only to record it,
    and only while it is the object the plan read: another manager's write in between
    leaves it alone, to be planned afresh by the next pass."""
    fleet, repo = converged
    cluster = clusters_running(fleet, "web")[0]
    members = fleet.clusters[cluster]
    members.patch(service("web"), {"metadata": {"annotations": {ANNOTATION_APPLIED: None}}},
                  manager="kubectl-annotate")
    lines: list[str] = []
    reconciler = Reconciler(None, clusters=[cluster], echo=lines.append,
                            clock=lambda: SUNDAY, connect=fleet.connect)
    try:
        member = reconciler.plan(compile_path(repo))[cluster]
        assert member.plan is not None and member.conn is not None
        assert [c.name for c in member.plan.restamps] == ["Service/shop/web"], lines
        assert member.plan.pending == []
        members.patch(service("web"), {"metadata": {"labels": {"oncall-team": "edge"}}},
                      manager="kubectl-label")
        done = execute(member.conn, member.plan, echo=lines.append)
    finally:
        reconciler.close()
    assert done[Action.UNCHANGED] == [], lines
    assert f"{cluster}: not recorded Service/shop/web: changed since it was planned " \
           "(the next pass looks at it again)" in lines
    meta = (live(fleet, cluster, "Service", "web") or {})["metadata"]
    assert ANNOTATION_APPLIED not in meta["annotations"]
    assert meta["labels"]["oncall-team"] == "edge"
    again = FakePass(fleet, repo)
    assert f"{cluster}: recorded Service/shop/web" in again.lines, again.lines
    assert again.writes[cluster] == 1, again.lines
    meta = (live(fleet, cluster, "Service", "web") or {})["metadata"]
    assert ANNOTATION_APPLIED in meta["annotations"] and meta["labels"]["oncall-team"] == "edge"


def test_replicas_changed_by_the_autoscaler_are_left_alone(
        converged: tuple[FakeFleet, Path]) -> None:
    fleet, repo = converged
    cluster = clusters_running(fleet, "api")[0]
    hpa = live(fleet, cluster, "HorizontalPodAutoscaler", "api") or {}
    start = (live(fleet, cluster, "Deployment", "api") or {})["spec"]["replicas"]
    # it started at its share (6 replicas over 2 clusters), not at the HPA's minimum (2)
    assert (start, hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (3, 2, 4)
    fleet.clusters[cluster].patch({**DEPLOYMENT, "metadata": {"name": "api", "namespace": "shop"}},
                                  {"spec": {"replicas": 4}},
                                  manager="horizontal-pod-autoscaler")
    run = FakePass(fleet, repo)
    assert run.writes[cluster] == 0, run.lines
    assert (live(fleet, cluster, "Deployment", "api") or {})["spec"]["replicas"] == 4


def web_scaler(floor: int) -> str:
    """A cpu PinScaler of ``shop/web`` from ``floor`` to 9 replicas, as a YAML document."""
    return ("---\napiVersion: pincompute.io/v1\nkind: PinScaler\n"
            "metadata: {name: web, project: shop}\n"
            f"spec:\n  target: web\n  minReplicas: {floor}\n  maxReplicas: 9\n"
            "  metrics: [{type: cpu, targetUtilization: 60}]\n")


def test_an_app_that_gets_a_scaler_keeps_its_replicas_handed_to_their_own_manager(
        converged: tuple[FakeFleet, Path]) -> None:
    """With the scaler pincompile stops setting the replicas the HPA now owns; first it
    hands them over (a pass reads lean LISTs, without managedFields: the hand-over GETs
    them), then applies the app's other change. The pass after it sends nothing."""
    fleet, repo = converged
    original = (repo / "apps/shop/web.yaml").read_text()
    edit(repo, "apps/shop/web.yaml", lambda d: d[0]["spec"].update(replicas=6), "web x6")
    FakePass(fleet, repo)
    clusters = clusters_running(fleet, "web")
    assert {(live(fleet, c, "Deployment", "web") or {})["spec"]["replicas"]
            for c in clusters} == {2}
    changed = original.replace("replicas: 3", "replicas: 6").replace(
        "healthTimeout: 30s", "healthTimeout: 45s")  # a change outside the pod template
    (repo / "apps/shop/web.yaml").write_text(changed + web_scaler(6))
    commit(repo, "web autoscaled")
    run = FakePass(fleet, repo)
    assert run.report.ok, run.lines
    assert_handed_over_with_the_update(fleet, "web", clusters, 2)
    again = FakePass(fleet, repo)
    assert all(again.writes[c] == 0 for c in MEMBERS), again.lines
    assert all(again.dry_runs[c] == 0 for c in MEMBERS), (again.dry_runs, again.lines)


def test_a_scaler_added_alone_costs_its_pass_and_the_next_pass_nothing(
        converged: tuple[FakeFleet, Path]) -> None:
    """A PinScaler added with nothing else changed: its pass creates the HPAs and hands the
    Deployments' replicas to their own manager, recording what it applied (the dry-run
    alone found nothing to change); the pass after it writes nothing and dry-runs
    nothing."""
    fleet, repo = converged
    clusters = clusters_running(fleet, "web")
    before = {c: (live(fleet, c, "Deployment", "web") or {})["spec"]["replicas"]
              for c in clusters}
    web = repo / "apps/shop/web.yaml"
    web.write_text(web.read_text() + web_scaler(3))
    commit(repo, "web autoscaled, nothing else changed")
    added = FakePass(fleet, repo)
    assert added.report.ok, added.lines
    for cluster in clusters:
        obj = live(fleet, cluster, "Deployment", "web")
        assert ((obj or {})["spec"]["replicas"], replicas_owners(obj)) == (
            before[cluster], [INITIAL_REPLICAS_MANAGER])
    again = FakePass(fleet, repo)
    assert all(again.writes[c] == 0 for c in MEMBERS), again.lines
    assert all(again.dry_runs[c] == 0 for c in MEMBERS), (again.dry_runs, again.lines)


def test_a_new_autoscaled_app_is_written_once_per_object_and_its_update_keeps_replicas(
        tmp_path: Path) -> None:
    """As `kubectl apply --server-side` would: one write per object in a first pass, the
    Deployments of an app with a scaler created with their share of its replicas. The
    first update after it hands them over before leaving them out: they stay."""
    repo = spec_repo(tmp_path / "repo")
    result = compile_path(repo)
    fleet = fake_fleet(result)
    first = FakePass(fleet, repo)
    assert first.report.ok, first.lines
    for cluster in MEMBERS:
        objects = sum(1 for m in result.manifests if m.cluster == cluster)
        assert first.writes[cluster] == objects, (cluster, first.written[cluster])
    clusters = clusters_running(fleet, "api")
    assert [replicas_owners(live(fleet, c, "Deployment", "api")) for c in clusters] == \
        [[FIELD_MANAGER]] * len(clusters)
    edit(repo, "apps/shop/api.yaml", lambda d: d[0]["spec"]["rollout"].update(
        healthTimeout="45s"), "api: a longer health timeout")
    updated = FakePass(fleet, repo)
    assert updated.report.ok, updated.lines
    assert_handed_over_with_the_update(fleet, "api", clusters, 3)
    again = FakePass(fleet, repo)
    assert all(again.writes[c] == 0 for c in MEMBERS), again.lines
