"""What a plan decides for each object, through ``pincompile plan`` and ``apply`` on
clusters held in memory (:mod:`tests.support.kube_fake`, held to a real API server by
``tests/reconciler/clients/test_access_contract.py``): drift from other field managers,
replaces of immutable changes, conflicts with objects pincompile does not manage and
their adoption, objects the API server refuses, prunes and their brake."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from pincompile.cli import cli
from pincompile.compiler import compile_path
from reconciler.clients.access import api_error
from reconciler.model import Obj
from reconciler.plan.cluster_plan import prune_limit
from tests.support.fake_passes import (
    FakePass,
    cli_on,
    clusters_running,
    commit,
    edit,
    live,
    set_image,
)
from tests.support.git import git
from tests.support.kube_fake import FakeFleet

WEB_HEALTH_TIMEOUT = 30
"""web's rollout.healthTimeout (fixtures/repo/apps/shop/web.yaml), seconds: also its
Deployments' progressDeadlineSeconds."""


@pytest.mark.parametrize(("limit", "managed", "want"),
                         [("20%", 100, 20), ("20%", 4, 0), ("5", 100, 5), ("100%", 7, 7)])
def test_prune_limit(limit: str, managed: int, want: int) -> None:
    assert prune_limit(limit, managed) == want



def cli_run(fleet: FakeFleet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
            *args: str) -> tuple[int, str]:
    done = CliRunner().invoke(cli, [*args, *cli_on(fleet, tmp_path, monkeypatch)])
    return done.exit_code, done.output


def ref(kind: str, name: str, api_version: str = "v1") -> Obj:
    return {"apiVersion": api_version, "kind": kind,
            "metadata": {"name": name, "namespace": "shop"}}


# --- drift ----------------------------------------------------------------------------------

def test_drift_is_shown_and_restored_and_other_managers_fields_stay(
        converged: tuple[FakeFleet, Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    fleet, repo = converged
    cluster = clusters_running(fleet, "web")[0]
    fleet.clusters[cluster].patch(
        ref("Deployment", "web", "apps/v1"),
        {"metadata": {"labels": {"oncall-note": "paged"}},
         "spec": {"progressDeadlineSeconds": 999}}, manager="kubectl-edit")
    code, out = cli_run(fleet, tmp_path, monkeypatch, "plan", str(repo), "--cluster",
                        cluster, "--exit-code")
    assert code == 1, out
    assert "update    Deployment/shop/web" in out
    assert "-  progressDeadlineSeconds: 999" in out
    assert f"+  progressDeadlineSeconds: {WEB_HEALTH_TIMEOUT}" in out
    FakePass(fleet, repo)
    restored = live(fleet, cluster, "Deployment", "web") or {}
    assert restored["spec"]["progressDeadlineSeconds"] == WEB_HEALTH_TIMEOUT
    assert restored["metadata"]["labels"]["oncall-note"] == "paged"


def test_a_label_and_an_annotation_changed_by_another_manager_are_found_and_restored(
        converged: tuple[FakeFleet, Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    fleet, repo = converged
    cluster = clusters_running(fleet, "web")[0]
    fleet.clusters[cluster].patch(
        ref("Service", "web"), {"metadata": {"labels": {"pincompute.io/tier": "reserved"},
                                             "annotations": {"pincompute.io/source": "x.yaml"}}},
        manager="kubectl-label")
    code, out = cli_run(fleet, tmp_path, monkeypatch, "plan", str(repo), "--cluster",
                        cluster, "--exit-code")
    assert code == 1, out
    assert "update    Service/shop/web" in out
    assert "-    pincompute.io/tier: reserved" in out and "+    pincompute.io/tier: ondemand" \
        in out
    assert "-    pincompute.io/source: x.yaml" in out
    assert "+    pincompute.io/source: apps/shop/web.yaml" in out
    run = FakePass(fleet, repo)
    assert f"{cluster}: update Service/shop/web" in run.lines, run.lines
    meta = (live(fleet, cluster, "Service", "web") or {})["metadata"]
    assert meta["labels"]["pincompute.io/tier"] == "ondemand"
    assert meta["annotations"]["pincompute.io/source"] == "apps/shop/web.yaml"


# --- in place or replaced ---------------------------------------------------------------------

def test_a_pinpods_sidecar_upgrade_keeps_the_pod_and_its_main_container(
        converged: tuple[FakeFleet, Path]) -> None:
    fleet, repo = converged
    before = live(fleet, "rt-a", "Pod", "notebook") or {}
    edit(repo, "platform/sidecars/logging.yaml", lambda d: d[0]["spec"]["container"].update(
        image="registry.internal/log-shipper:2.3.0"), "logging 2.3")
    run = FakePass(fleet, repo)
    assert "rt-a: update Pod/shop/notebook" in run.lines, run.lines
    after = live(fleet, "rt-a", "Pod", "notebook") or {}
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    assert after["spec"]["containers"][0]["image"] == before["spec"]["containers"][0]["image"]
    images = [c["image"] for c in [*after["spec"].get("initContainers", []),
                                   *after["spec"]["containers"]]]
    assert "registry.internal/log-shipper:2.3.0" in images


def test_a_changed_job_template_is_a_replace(
        converged: tuple[FakeFleet, Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    fleet, repo = converged
    old = live(fleet, "rt-b", "Job", "batch") or {}
    edit(repo, "apps/shop/batch.yaml", set_image("registry.internal/shop/batch:1.1.0"),
         "batch 1.1")
    _, out = cli_run(fleet, tmp_path, monkeypatch, "plan", str(repo), "--cluster", "rt-b")
    assert "replace   Job/shop/batch" in out, out
    run = FakePass(fleet, repo)
    assert "rt-b: recreating Job/shop/batch (delete, then create): Job.batch \"batch\" is " \
           "invalid: spec.template.spec: Invalid value:" in "\n".join(run.lines), run.lines
    new = live(fleet, "rt-b", "Job", "batch") or {}
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    assert any(c["image"].endswith("batch:1.1.0")
               for c in new["spec"]["template"]["spec"]["containers"])


# --- conflicts ----------------------------------------------------------------------------------

def test_an_unmanaged_object_is_a_conflict_until_adopted(
        converged: tuple[FakeFleet, Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    fleet, repo = converged
    cluster = clusters_running(fleet, "web")[0]
    fleet.clusters[cluster].create(
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": "cart", "namespace": "shop", "labels": {"owner": "someone"}},
         "spec": {"selector": {"app": "cart"}, "ports": [{"port": 80, "targetPort": 9090}]}},
        manager="kubectl-create")
    (repo / "apps/shop/cart.yaml").write_text(
        (repo / "apps/shop/web.yaml").read_text().replace("name: web", "name: cart"))
    commit(repo, "cart")
    code, out = cli_run(fleet, tmp_path, monkeypatch, "apply", str(repo), "--no-wait")
    assert code == 1, out
    assert (f"{cluster}: conflict Service/shop/cart: held by an object pincompile does not "
            "manage (field manager kubectl-create)") in out, out
    svc = live(fleet, cluster, "Service", "cart") or {}
    assert "app.kubernetes.io/managed-by" not in svc["metadata"]["labels"]
    assert svc["spec"]["ports"][0]["targetPort"] == 9090
    code, out = cli_run(fleet, tmp_path, monkeypatch, "apply", str(repo), "--adopt",
                        "--no-wait")
    assert code == 0 and "NOT CONVERGED" not in out, out
    svc = live(fleet, cluster, "Service", "cart") or {}
    assert svc["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "pincompile"
    assert svc["spec"]["ports"][0]["targetPort"] == 8080


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


def legacy_newcomer(fleet: FakeFleet, repo: Path) -> tuple[str, str]:
    """Add the newcomer app, whose name a Deployment of another manager (another selector)
    holds already; its cluster and that Deployment's uid."""
    (repo / "apps/shop/newcomer.yaml").write_text(NEWCOMER)
    commit(repo, "newcomer")
    (cluster,) = {m.cluster for m in compile_path(repo).manifests
                  if m.kind == "Deployment" and m.name == "newcomer"}
    labels = {"app": "legacy-newcomer"}
    held = fleet.clusters[cluster].create({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "newcomer", "namespace": "shop", "labels": {"owner": "legacy"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {"containers": [
                     {"name": "legacy", "image": "registry.internal/legacy:1"}]}}}},
        manager="legacy-deployer")
    return cluster, held["metadata"]["uid"]


def test_a_name_held_with_another_selector_is_a_conflict_until_adopted_by_replace(
        converged: tuple[FakeFleet, Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    fleet, repo = converged
    cluster, legacy_uid = legacy_newcomer(fleet, repo)
    why = ("conflict Deployment/shop/newcomer: held by an object pincompile does not manage "
           "(field manager legacy-deployer")
    code, out = cli_run(fleet, tmp_path, monkeypatch, "plan", str(repo), "--cluster", cluster,
                        "--exit-code")
    assert code == 1, out
    assert "conflict  Deployment/shop/newcomer  (held by an object pincompile does not " \
           "manage (field manager legacy-deployer" in out, out
    assert "spec.selector differs and cannot change in place" in out
    code, out = cli_run(fleet, tmp_path, monkeypatch, "apply", str(repo), "--no-wait")
    assert code == 1, out
    tail = out[out.index("NOT CONVERGED"):]
    assert f"{cluster}: {why}" in tail and "spec.selector differs" in tail, tail
    assert (live(fleet, cluster, "Deployment", "newcomer") or {})["metadata"]["uid"] == \
        legacy_uid
    status = FakePass(fleet, repo).statuses["PinterestService/shop/newcomer"]
    assert status["phase"] == "Degraded", status
    assert "conflict: held by an object pincompile does not manage (field manager " \
           "legacy-deployer" in status["message"] and "spec.selector differs" in \
           status["message"]
    code, out = cli_run(fleet, tmp_path, monkeypatch, "apply", str(repo), "--adopt",
                        "--no-wait")
    assert code == 0, out
    assert f"{cluster}: recreating Deployment/shop/newcomer (delete, then create): adopted: " \
           "spec.selector cannot change in place" in out, out
    adopted = live(fleet, cluster, "Deployment", "newcomer") or {}
    assert adopted["metadata"]["uid"] != legacy_uid
    assert adopted["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "pincompile"
    assert adopted["spec"]["selector"]["matchLabels"] != {"app": "legacy-newcomer"}
    again = FakePass(fleet, repo)
    assert again.report.converged and again.writes[cluster] == 0, again.lines


def test_an_object_the_api_server_rejects_leaves_the_pass_unconverged(
        converged: tuple[FakeFleet, Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    fleet, repo = converged
    (repo / "apps/shop/newcomer.yaml").write_text(NEWCOMER)
    commit(repo, "newcomer")
    FakePass(fleet, repo)
    (cluster,) = clusters_running(fleet, "newcomer")

    def no_banned_images(_operation: str, obj: Obj) -> None:
        pods = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
        if any(c["image"].endswith(":2.0.0-banned") for c in pods.get("containers") or []):
            raise api_error(422, f'deployments.apps "{obj["metadata"]["name"]}" is forbidden: '
                                 "ValidatingAdmissionPolicy 'no-v2' with binding 'no-v2' "
                                 "denied request: images tagged 2.0.0-banned are not allowed "
                                 "here", "Invalid")

    fleet.clusters[cluster].admission.append(no_banned_images)
    edit(repo, "apps/shop/newcomer.yaml",
         set_image("registry.internal/shop/newcomer:2.0.0-banned"), "newcomer 2")
    code, out = cli_run(fleet, tmp_path, monkeypatch, "apply", str(repo), "--no-wait")
    assert code == 1, out
    tail = out[out.index("NOT CONVERGED"):]
    assert "(1 rejected)" in tail and f"{cluster}: rejected Deployment/shop/newcomer: " in tail
    assert "images tagged 2.0.0-banned are not allowed here" in tail, tail
    image = (live(fleet, cluster, "Deployment", "newcomer") or {})["spec"]["template"][
        "spec"]["containers"][0]["image"]
    assert image.endswith("newcomer:1.0.0")


# --- prune ------------------------------------------------------------------------------------

def retire_batch(fleet: FakeFleet, repo: Path) -> FakePass:
    """The pass after a commit that removes the batch Job's spec."""
    (repo / "apps/shop/batch.yaml").unlink()
    commit(repo, "retire batch")
    return FakePass(fleet, repo)


def test_a_removed_app_is_pruned_but_an_unmanaged_lookalike_is_not(
        converged: tuple[FakeFleet, Path]) -> None:
    fleet, repo = converged
    fleet.clusters["rt-b"].create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "batch-notes", "namespace": "shop",
        "labels": {"pincompute.io/app": "batch", "pincompute.io/project": "shop"}}})
    run = retire_batch(fleet, repo)
    assert [str(r) for r in run.report.clusters["rt-b"].pruned] == ["Job/shop/batch"]
    assert live(fleet, "rt-b", "Job", "batch") is None
    assert live(fleet, "rt-b", "ConfigMap", "batch-notes") is not None


def test_an_object_already_being_deleted_is_not_pruned_again(
        converged: tuple[FakeFleet, Path]) -> None:
    fleet, repo = converged
    cluster = fleet.clusters["rt-b"]
    job = live(fleet, "rt-b", "Job", "batch")
    assert job is not None
    job["metadata"]["finalizers"] = ["example.com/hold"]
    cluster.put(job)
    assert cluster.delete(job)  # held by its finalizer: terminating, still listed
    run = retire_batch(fleet, repo)
    assert run.report.ok, run.lines
    assert not run.report.clusters["rt-b"].pruned
    left = live(fleet, "rt-b", "Job", "batch")
    assert left is not None and left["metadata"]["deletionTimestamp"]


def test_an_object_in_a_namespace_being_deleted_is_left_to_that_deletion(
        converged: tuple[FakeFleet, Path]) -> None:
    fleet, repo = converged
    cluster = fleet.clusters["rt-b"]
    namespace = live(fleet, "rt-b", "Namespace", "shop")
    assert namespace is not None
    namespace["metadata"]["deletionTimestamp"] = "2026-12-01T00:00:00Z"
    cluster.put(namespace)  # as the namespace controller leaves it while it empties it
    run = retire_batch(fleet, repo)
    assert not run.report.clusters["rt-b"].pruned, run.lines
    assert live(fleet, "rt-b", "Job", "batch") is not None


def test_a_prune_over_max_prune_prunes_nothing_and_says_so(
        converged: tuple[FakeFleet, Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    fleet, repo = converged
    for rel in ("apps/shop/web.yaml", "apps/shop/api.yaml", "apps/shop/notebook.yaml"):
        (repo / rel).unlink()
    commit(repo, "oops: delete the shop")
    code, out = cli_run(fleet, tmp_path, monkeypatch, "apply", str(repo), "--max-prune", "20%",
                        "--no-wait")
    assert code == 1, out  # a held prune is not convergence
    assert "0 pruned" in out
    tail = out[out.index("NOT CONVERGED"):]
    assert "prune held" in tail and "would be pruned, over --max-prune 20%" in tail, tail
    assert clusters_running(fleet, "web")
    git(repo, "revert", "--no-edit", "HEAD")
    restored = FakePass(fleet, repo)  # every object is still there: nothing to create
    assert restored.report.ok, restored.lines
    assert not [r for c in restored.report.clusters.values() for r in [*c.created, *c.pruned]]
