"""Creating what the live state lacks, on clusters held in memory: no dry-run first, a
name another object holds left to it (a conflict), an object of ours the read missed
planned as it is, and a create the API server refuses reported as a dry-run's refusal
would be, with nothing after it in its app's order written."""

from __future__ import annotations

from pathlib import Path

import pytest

from pincompile.compiler import compile_path
from reconciler.clients.access import api_error
from reconciler.kinds import order
from reconciler.model import Left, Obj
from reconciler.plan.change import Action
from reconciler.plan.cluster_plan import Options, plan_cluster
from reconciler.plan.execute import execute
from tests.support.fake_passes import FakePass, fake_fleet, live, spec_repo
from tests.support.kube_fake import FakeAccess, FakeCluster, FakeFleet


def objects_of(fleet: FakeFleet, cluster: str, app: str) -> list[tuple[str, str]]:
    """(kind, name) of every object of ``app`` in the in-memory ``cluster``."""
    held = fleet.clusters[cluster].objects.values()
    return sorted((o["kind"], o["metadata"]["name"]) for o in held
                  if (o["metadata"].get("labels") or {}).get("pincompute.io/app") == app)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return spec_repo(tmp_path / "repo")


def test_a_first_pass_creates_every_object_with_one_request_and_no_dry_run(
        repo: Path) -> None:
    result = compile_path(repo)
    fleet = fake_fleet(result)
    first = FakePass(fleet, result)
    assert first.report.converged, first.lines
    assert sum(first.dry_runs.values()) == 0, first.dry_runs  # host and members alike
    for member, counted in first.reconciler.connections.items():
        if member == "host":
            continue
        desired = [m for m in result.manifests if m.cluster == member]
        scaled = [m for m in desired if m.kind == "HorizontalPodAutoscaler"]
        # one apply per object, and one more per autoscaled Deployment (its replicas
        # handed to a manager of their own): nothing else is written
        assert counted.stats.writes == len(desired) + len(scaled), counted.stats.by_verb
        assert len(first.report.clusters[member].created) == len(desired)
    assert FakePass(fleet, result).member_writes == 0


def test_a_create_the_api_server_refuses_is_rejected_and_the_rest_of_its_app_waits(
        repo: Path) -> None:
    result = compile_path(repo)
    fleet = fake_fleet(result)
    cluster = next(m.cluster for m in result.manifests
                   if m.kind == "Deployment" and m.name == "web")

    def no_web(operation: str, obj: Obj) -> None:
        if operation == "CREATE" and obj["kind"] == "Deployment" \
                and obj["metadata"]["name"] == "web":
            raise api_error(403, 'deployments.apps "web" is forbidden: ValidatingAdmission'
                                 "Policy 'freeze' denied request: web is frozen", "Forbidden")

    fleet.clusters[cluster].admission.append(no_web)
    run = FakePass(fleet, result)
    assert not run.report.converged and run.report.ok  # reached, left different: exit 1
    assert [(c, str(u)) for c, u in run.report.unconverged] == [
        (cluster, f"{Left.REJECTED} Deployment/shop/web: deployments.apps \"web\" is "
                  "forbidden: ValidatingAdmissionPolicy 'freeze' denied request: web is "
                  "frozen")]
    web = {m.kind for m in result.manifests if m.cluster == cluster and m.name == "web"}
    before = {k for k in web if order(k) < order("Deployment")}
    assert before and {k for k, _ in objects_of(fleet, cluster, "web")} == before
    assert sum(run.dry_runs.values()) == 0
    status = run.statuses["PinApp/shop/web"]
    assert status["phase"] == "Degraded" and "web is frozen" in status["message"], status
    others = [c for c in fleet.clusters if c not in ("host", cluster)]
    for other in others:  # the app everywhere else, and every other app, as usual
        assert live(fleet, other, "Deployment", "web") is not None
    assert objects_of(fleet, cluster, "api") == sorted(
        (m.kind, m.name) for m in result.manifests if m.cluster == cluster
        and (m.obj["metadata"].get("labels") or {}).get("pincompute.io/app") == "api")
    fleet.clusters[cluster].admission.clear()
    healed = FakePass(fleet, result)
    assert healed.report.converged and {k for k, _ in objects_of(fleet, cluster, "web")} \
        == web


def test_a_refused_namespace_holds_back_everything_in_it(repo: Path) -> None:
    result = compile_path(repo)
    fleet = fake_fleet(result)

    def no_shop(_operation: str, obj: Obj) -> None:
        if obj["kind"] == "Namespace" and obj["metadata"]["name"] == "shop":
            raise api_error(403, 'namespaces "shop" is forbidden: quota of namespaces',
                            "Forbidden")

    fleet.clusters["rt-a"].admission.append(no_shop)
    run = FakePass(fleet, result)
    assert [str(u) for c, u in run.report.unconverged if c == "rt-a"] == [
        f'{Left.REJECTED} Namespace/shop: namespaces "shop" is forbidden: quota of namespaces']
    # the Namespace's create and the cluster's own objects; not one request (a 404 each)
    # for what the namespace would hold
    assert set(run.written["rt-a"]) == {"namespaces", "priorityclasses"}, run.written
    assert run.written["rt-b"]["deployments"]


def test_an_object_of_ours_that_the_read_missed_is_planned_as_it_is(
        converged: tuple[FakeFleet, Path]) -> None:
    """A live state that lacks an object of ours (a watch cache behind, another pass's
    create in between) plans a create: the create finds the name held by that object,
    which is then planned as the live object it is — not a conflict, not recreated."""
    fleet, repo = converged
    result = compile_path(repo)
    cluster = next(m.cluster for m in result.manifests
                   if m.kind == "Service" and m.name == "web")
    access = fleet.connect(cluster, cluster)
    desired = [m.obj for m in result.manifests if m.cluster == cluster and m.name == "web"
               and m.kind == "Service"]
    uid = (live(fleet, cluster, "Service", "web") or {})["metadata"]["uid"]
    plan = plan_cluster(access, desired, {}, Options(prune=False))
    assert [c.action for c in plan.changes] == [Action.CREATE]
    done = execute(access, plan)
    assert [c.action for c in plan.changes] == [Action.UNCHANGED], plan.changes[0].reason
    assert not any(done.values())
    assert (live(fleet, cluster, "Service", "web") or {})["metadata"]["uid"] == uid
    # the refused create and the read of its holder, whose record says it is unchanged
    assert access.stats.by_verb == {"patch": 1, "get": 1}, access.stats.by_verb


def test_a_create_whose_holder_is_gone_by_the_time_it_is_read_is_made_again() -> None:
    cluster = FakeCluster("c")
    access = FakeAccess(cluster.name, cluster)
    cm: Obj = {"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "x", "namespace": "default",
                            "labels": {"app.kubernetes.io/managed-by": "pincompile"}},
               "data": {"a": "1"}}
    cluster.apply({**cm, "data": {"b": "2"}}, manager="someone")
    gets = 0
    real_get = access.get

    def get_after_a_delete(ref: Obj) -> Obj | None:
        nonlocal gets
        gets += 1
        cluster.delete(ref)  # deleted between the create's 409 and this read
        return real_get(ref)

    access.get = get_after_a_delete  # type: ignore[method-assign]
    plan = plan_cluster(access, [cm], {}, Options(prune=False))
    done = execute(access, plan)
    assert [c.name for c in done[Action.CREATE]] == ["ConfigMap/default/x"] and gets == 1
    assert (cluster.get(cm) or {})["data"] == {"a": "1"}

