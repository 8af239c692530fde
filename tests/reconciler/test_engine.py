"""Whole reconcile passes (:meth:`Reconciler.pass_of`) over a host and three member clusters
held in memory (:mod:`tests.support.kube_fake`): what a pass writes where, how many
requests it makes, and how it reports a cluster that fails. What only real control planes
show (controllers converging, a pass after them finding nothing to change) is in
``test_reconcile_e2e.py``."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from pincompile.cli import cli
from pincompile.compiler import compile_path
from pincompile.selector import Targets
from reconciler.engine import Reconciler
from tests.support.fake_passes import (
    MEMBERS,
    SUNDAY,
    FakePass,
    cli_on,
    clusters_running,
    commit,
    edit,
    fake_fleet,
    live,
    one_pass,
    settle,
    spec_repo,
)

APPS = {"PinApp/shop/web": "Healthy", "PinApp/shop/api": "Healthy",
        "PinPod/shop/notebook": "Healthy", "PinScaler/shop/api": "Healthy"}


def test_a_first_pass_creates_every_object_and_stores_specs_and_statuses_on_the_host(
        tmp_path: Path) -> None:
    repo = spec_repo(tmp_path / "repo")
    result = compile_path(repo)
    fleet = fake_fleet(result)
    first = FakePass(fleet, result, wait=True)  # the controllers act at once
    assert first.report.ok and first.report.converged, first.lines
    created = {n: len(c.created) for n, c in first.report.clusters.items() if n != "host"}
    assert sum(created.values()) == len(result.manifests)
    for member in MEMBERS:  # exactly the compiled objects, each where it was placed
        wanted = sorted(m.obj["kind"] + "/" + m.obj["metadata"]["name"]
                        for m in result.manifests if m.cluster == member)
        assert sorted(f"{r.kind}/{r.name}" for r in first.report.clusters[member].created) \
            == wanted
    for app, phase in APPS.items():
        assert first.statuses[app]["phase"] == phase, first.statuses[app]
    web = first.statuses["PinApp/shop/web"]
    assert sorted(c["name"] for c in web["clusters"]) == clusters_running(fleet, "web")
    assert sum(c["replicas"] for c in web["clusters"]) == 3
    host = fleet.clusters["host"]
    stored = {k: o for k, o in host.objects.items() if k[1] == "shop" and k[0] != "Event"}
    assert set(stored) == {("PinApp", "shop", "web"), ("PinApp", "shop", "api"),
                           ("PinPod", "shop", "notebook"), ("PinterestJobSet", "shop", "batch"),
                           ("PinScaler", "shop", "api")}
    assert stored[("PinApp", "shop", "web")]["status"]["phase"] == "Healthy"
    assert stored[("PinApp", "shop", "web")]["spec"]["replicas"] == 3
    assert sorted(k[2] for k in host.objects if k[0] == "Cluster") == list(MEMBERS)


def test_a_pass_with_nothing_to_do_writes_nothing_sends_no_dry_run_and_lists_each_kind_once(
        tmp_path: Path) -> None:
    repo = spec_repo(tmp_path / "repo")
    result = compile_path(repo)
    fleet = fake_fleet(result)
    FakePass(fleet, result)
    FakePass(fleet, result)  # the Job completed meanwhile: its app's status changed once
    again = FakePass(fleet, result)
    assert again.report.ok and sum(again.writes.values()) == 0, again.lines
    assert sum(again.dry_runs.values()) == 0
    assert again.lists and max(again.lists.values()) == 1
    assert sum(c.unchanged for n, c in again.report.clusters.items() if n != "host") == \
        len(result.manifests)


def test_a_warm_watch_cache_answers_a_pass_without_any_list(tmp_path: Path) -> None:
    repo = spec_repo(tmp_path / "repo")
    result = compile_path(repo)
    fleet = fake_fleet(result)
    reconciler = Reconciler(None, watch=True, clock=lambda: SUNDAY, connect=fleet.connect)
    try:
        assert FakePass(fleet, result, reconciler=reconciler).report.ok
        settle(reconciler, fleet)
        FakePass(fleet, result, reconciler=reconciler)  # the Job's completion
        settle(reconciler, fleet)
        warm = FakePass(fleet, result, reconciler=reconciler)
        assert warm.report.ok
        assert sum(warm.lists.values()) == 0, warm.lists
        assert sum(warm.writes.values()) == 0 and sum(warm.dry_runs.values()) == 0
    finally:
        reconciler.close()


def test_a_long_running_reconciler_still_finds_and_restores_a_change_by_anyone(
        tmp_path: Path) -> None:
    """Its plan memo skips the dry-runs of what it found unchanged, but only while the
    watch reports no write to the object."""
    repo = spec_repo(tmp_path / "repo")
    result = compile_path(repo)
    fleet = fake_fleet(result)
    reconciler = Reconciler(None, watch=True, clock=lambda: SUNDAY, connect=fleet.connect)
    try:
        FakePass(fleet, result, reconciler=reconciler)
        settle(reconciler, fleet)
        FakePass(fleet, result, reconciler=reconciler)
        cluster = clusters_running(fleet, "web")[0]
        ref = {"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "web", "namespace": "shop"}}
        fleet.clusters[cluster].patch(ref, {"spec": {"progressDeadlineSeconds": 999}},
                                      manager="kubectl-edit")
        settle(reconciler, fleet)
        restored = FakePass(fleet, result, reconciler=reconciler)
    finally:
        reconciler.close()
    assert [str(r) for r in restored.report.clusters[cluster].updated] == \
        ["Deployment/shop/web"], restored.lines
    assert restored.dry_runs[cluster] == 1 and sum(restored.dry_runs.values()) == 1
    assert (live(fleet, cluster, "Deployment", "web") or {})["spec"][
        "progressDeadlineSeconds"] == 30


def test_a_push_that_changes_one_app_writes_only_that_apps_objects_and_status(
        tmp_path: Path) -> None:
    repo = spec_repo(tmp_path / "repo")
    fleet = fake_fleet(compile_path(repo))
    reconciler = Reconciler(None, watch=True, clock=lambda: SUNDAY, connect=fleet.connect)
    try:
        FakePass(fleet, repo, reconciler=reconciler)
        settle(reconciler, fleet)
        FakePass(fleet, repo, reconciler=reconciler)
        settle(reconciler, fleet)
        edit(repo, "apps/shop/api.yaml", lambda docs: docs[0]["spec"]["template"][
            "containers"][0].update(image="registry.internal/shop/api:2.0.1"), "api 2.0.1")
        push = FakePass(fleet, repo, reconciler=reconciler)
    finally:
        reconciler.close()
    members = push.written_members
    assert push.report.ok, push.lines
    written = [ref for name, c in push.report.clusters.items() if name != "host"
               for ref in [*c.created, *c.updated, *c.replaced, *c.pruned]]
    api_clusters = clusters_running(fleet, "api")
    assert sorted((r.cluster, r.kind, r.name) for r in written) == \
        [(c, "Deployment", "api") for c in api_clusters]
    # api is autoscaled and its HPAs have not scaled it: its first update hands the
    # replicas over (one apply each) before the apply that leaves them out
    assert members == {"deployments": 2 * len(api_clusters)}, members
    # on the host: the app's resource (its new compiled digest), its status, one Event
    assert push.written["host"] == {"pinapps": 2, "events": 1}, push.written["host"]
    api = push.statuses["PinApp/shop/api"]
    assert api["observedRevision"] == push.result.revision
    assert {c["observedRevision"] for c in api["clusters"]} == {push.result.revision}
    for untouched in ("PinApp/shop/web", "PinScaler/shop/api", "PinPod/shop/notebook"):
        assert push.statuses[untouched]["observedRevision"] not in ("", push.result.revision)


def test_a_spec_error_anywhere_sends_no_request_to_any_cluster(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = spec_repo(tmp_path / "repo")
    fleet = fake_fleet(compile_path(repo))
    notebook = repo / "apps/shop/notebook.yaml"
    notebook.write_text(notebook.read_text().replace('cpu: "1"', "cpu: lots"))
    commit(repo, "broken")
    run = FakePass(fleet, repo)
    assert run.report.error and not run.report.clusters
    assert run.reconciler.connections == {} and fleet.accesses == []
    args = cli_on(fleet, tmp_path, monkeypatch)
    done = CliRunner().invoke(cli, ["apply", str(repo), *args])
    assert done.exit_code == 1
    assert "notebook.yaml:" in done.output and "nothing was applied" in done.output
    assert fleet.accesses == []


def test_an_unreachable_member_is_reported_and_the_others_converge(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = spec_repo(tmp_path / "repo")
    fleet = fake_fleet(compile_path(repo))
    FakePass(fleet, repo)
    extra = (repo / "apps/shop/web.yaml").read_text().replace("name: web", "name: extra")
    (repo / "apps/shop/extra.yaml").write_text(extra.replace("zone-by-zone", "all-at-once"))
    commit(repo, "extra app")
    fleet.clusters["rt-c"].down = "connection refused"
    args = cli_on(fleet, tmp_path, monkeypatch)
    run = CliRunner().invoke(cli, ["apply", str(repo), "--no-wait", *args])
    assert run.exit_code == 3, run.output
    assert "rt-c: FAILED: connection refused" in run.output
    for cluster in ("rt-a", "rt-b"):
        assert (live(fleet, cluster, "Deployment", "extra") or {})["spec"]["replicas"] == 1
    row = next(line for line in run.output.splitlines() if line.startswith("PinApp/shop/extra"))
    assert "rt-c=?" in row
    fleet.clusters["rt-c"].down = None
    again = FakePass(fleet, repo)
    assert again.report.ok
    assert (live(fleet, "rt-c", "Deployment", "extra") or {})["spec"]["replicas"] == 1


def test_a_pass_narrowed_to_a_project_on_a_new_host_converges_without_cluster_resources(
        tmp_path: Path) -> None:
    """The failover state of a member lives in its Cluster resource on the host, which a
    narrowed pass does not write: before, the pass failed on the host with a 404."""
    repo = spec_repo(tmp_path / "repo")
    result = compile_path(repo)
    fleet = fake_fleet(result)
    reconciler = Reconciler(None, clock=lambda: SUNDAY, connect=fleet.connect,
                            apps=Targets(project="shop"))
    report = one_pass(reconciler, result)
    reconciler.close()
    assert report.ok and report.converged, report.clusters["host"]
    assert not [k for k in fleet.clusters["host"].objects if k[0] == "Cluster"]
