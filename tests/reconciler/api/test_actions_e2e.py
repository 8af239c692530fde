"""The actions on the session fleet, through a real HTTP server and the CLI: a zone-by-zone
PinApp in three zones (us-east-1a/b/c) applied by the reconciler; `restart` rolls its
Deployment in every cluster, zone by zone, and the next pass neither reverts nor counts
the annotation; `rollout pause` holds a new image's next zone until `rollout resume`;
another project's tenant is refused (403, audited, exit 1); `rerun` of a finished
PinterestJobSet deletes its Job and creates it again, which runs to completion again,
with the events recorded, and the next pass leaves the new Job as it is."""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from kubernetes import client as k8s
from kubernetes import watch

from pincompile.cli import cli
from pincompile.compiler import compile_path
from reconciler.api.access import HostAccess, RateLimits
from reconciler.api.app import Gateway, create_app
from reconciler.api.client import ApiClient
from reconciler.api.pods import MemberPods
from reconciler.api.resumer import RestartResumer
from reconciler.api.sources import HostApps
from reconciler.clients import read, write
from reconciler.clients.connect import Connection
from reconciler.clock import iso_time
from reconciler.commands.interrupt import GRACE_SECONDS
from reconciler.engine import Reconciler
from reconciler.fleet import fleet as fleet_mod
from reconciler.fleet.clusters import ClusterSpec
from reconciler.host import cr_ref
from reconciler.model import AppKey, PassReport
from reconciler.plan.cluster_plan import Options, read_live
from reconciler.rollout import pause
from reconciler.rollout.restart import (
    CLAIM_AT,
    CLAIM_RENEWED,
    RESTART_MANAGER,
    RESTARTED_AT_ANNOTATION,
    Claim,
    Workload,
    claim_of,
    claim_patch,
    restart_patch,
)
from reconciler.store import Store
from tests.support import api_fleet
from tests.support.fake_passes import one_pass
from tests.support.fleet import spec_repo
from tests.support.git import git
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[3]
PROJECT, OTHER, TENANTS = "act-shop", "act-other", "act-e2e-tenants"
APP = ("PinApp", PROJECT, "rolling")
REF = "/".join(APP)
SPEC = f"""\
apiVersion: pincompute.io/v1
kind: PinApp
metadata: {{name: rolling, project: {PROJECT}}}
spec:
  replicas: 3
  tier: ondemand
  template:
    containers:
      - name: main
        image: registry.internal/act-shop/rolling:IMAGE
        resources: {{cpu: 100m, memory: 128Mi}}
  placement: {{regions: [us-east-1], spread: zone, maxClusters: 3}}
  rollout: {{strategy: zone-by-zone, healthTimeout: 30s}}
"""
PROJECTS = "".join(f"""\
---
apiVersion: pincompute.io/v1
kind: Project
metadata: {{name: {name}}}
spec:
  owners: [team-shop]
  quota: {{ondemand: {{cpu: "16", memory: 32Gi}}}}
  placement: {{regions: [us-east-1]}}
""" for name in (PROJECT, OTHER))


@dataclass
class Served:
    url: str
    repo: Path
    kubeconfig: str
    zone_of: dict[str, str]
    env: dict[str, str]
    """PINCOMPILE_SERVER and the token of ``dana`` (may act in the app's project)."""
    erin: str
    """The token of ``erin`` (may act in another project only)."""
    store: str = ""
    """The URL of the server's insight store."""
    gateway: Any = None
    apps: Any = None
    """The server's watch of the host's apps (:class:`HostApps`)."""


def write_spec(repo: Path, image: str, message: str) -> None:
    (repo / "apps" / PROJECT).mkdir(parents=True, exist_ok=True)
    (repo / "apps" / PROJECT / "rolling.yaml").write_text(SPEC.replace("IMAGE", image))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)


def reconcile(served: Served, *, wait: bool = True,
              app: AppKey = APP) -> tuple[PassReport, dict[str, Any]]:
    """One pass of the spec repository (nothing pruned: the fleet is shared); ``app``'s
    status document."""
    reconciler = Reconciler(served.kubeconfig, options=Options(prune=False),
                            clusters=served.zone_of)
    try:
        started = time.monotonic()
        report = one_pass(reconciler, compile_path(served.repo), 60 if wait else None)
        print(f"pass: {time.monotonic() - started:.1f}s, {report.writes} writes")
        return report, reconciler.statuses[app]
    finally:
        reconciler.close()


def tenant(host: Connection, user: str, project: str) -> str:
    """A service account ``user`` with both tenant roles in ``project``; its token."""
    return api_fleet.tenant_token(host, TENANTS, user, project, api_fleet.tenant_rules(
        "pincompute-app-debugger", "pincompute-app-operator"))


@pytest.fixture(scope="module")
def served(fleet: fleet_mod.FleetState, fleet_specs: dict[str, ClusterSpec],
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The app applied by a pass, tenants on the host, the API on a uvicorn server."""
    root = tmp_path_factory.mktemp("actions")
    source = root / "source"
    shutil.copytree(REPO / "examples" / "platform", source / "platform")
    shutil.copy(REPO / "examples" / "pincompile.yaml", source)
    (source / "platform" / "projects" / "act.yaml").write_text(PROJECTS)
    repo = spec_repo(source, root / "repo")
    write_spec(repo, "1.0.0", "rolling 1.0.0")
    kubeconfig = str(fleet.kubeconfig)
    host = Connection("host", "host", kubeconfig)
    served = Served("", repo, kubeconfig, {s.name: s.zone for s in fleet_specs.values()
                                            if s.region == "us-east-1"}, {}, "")
    report, _ = reconcile(served, wait=False)  # the restart's gate waits for its pods
    assert report.ok, report
    for namespace in (TENANTS, OTHER):
        k8s.CoreV1Api(host.api).create_namespace({"metadata": {"name": namespace}})
    dana, served.erin = tenant(host, "dana", PROJECT), tenant(host, "erin", OTHER)
    apps = HostApps(host)
    pods = MemberPods(kubeconfig, lambda: {s.name: s.context for s in fleet_specs.values()})
    served.store = f"sqlite:///{root / 'insight.db'}"
    store = Store.open(served.store)
    gateway = Gateway(apps=apps, store=store, access=HostAccess(host, ttl=30),
                      limits=RateLimits(100, 100), pods=pods, host=host)
    apps.wait_synced()
    served.gateway, served.apps = gateway, apps
    try:
        with api_fleet.served_locally(create_app(gateway)) as served.url:
            served.env = {"PINCOMPILE_SERVER": served.url, "PINCOMPILE_TOKEN": dana}
            yield served
    finally:
        apps.close()
        pods.close()
        store.close()
        host.close()


def deployments(served: Served) -> dict[str, Any]:
    """The app's Deployment in each cluster it is placed in (cluster → V1Deployment)."""
    out = {}
    for cluster in served.zone_of:
        member = Connection(cluster, cluster, served.kubeconfig)
        try:
            out[cluster] = k8s.AppsV1Api(member.api).read_namespaced_deployment(
                "rolling", PROJECT)
        except k8s.ApiException:
            continue
        finally:
            member.close()
    return out


def events(served: Served, app: AppKey = APP) -> list[str]:
    client = ApiClient(served.url, served.env["PINCOMPILE_TOKEN"])
    return [f"{e.reason}: {e.message}" for e in client.events(*app)]


def test_restart_rolls_every_cluster_zone_by_zone_and_the_next_pass_keeps_it(
        served: Served) -> None:
    started = time.monotonic()
    done = CliRunner().invoke(cli, ["restart", REF, "-o", "json"], env=served.env)
    assert done.exit_code == 0, done.output
    answer = json.loads(done.output)
    placed = deployments(served)
    assert [z["zone"] for z in answer["zones"]] == sorted({served.zone_of[c] for c in placed})
    claim = claim_of(read.get(served.gateway.host, cr_ref(APP)))
    assert claim is not None and claim.holder == served.gateway.operations.identity, claim
    wait_for(lambda: any(
        e.startswith("RestartComplete") for e in events(served)), 90, "the restart to complete",
             describe=lambda: str(events(served)))
    wait_for(lambda: claim_of(
        read.get(served.gateway.host, cr_ref(APP))) is None, 30,
             "the restart's claim to be released")
    took = time.monotonic() - started
    reasons = [e.split(":")[0] for e in events(served)]
    assert reasons == ["RestartRequested", "RestartZone", "RestartZone", "RestartZone",
                       "RestartComplete"], reasons
    stamps = {c: (d.spec.template.metadata.annotations or {}).get(RESTARTED_AT_ANNOTATION)
              for c, d in deployments(served).items()}
    assert len(stamps) == 3 and len(set(stamps.values())) == 1 and None not in stamps.values()
    for deployment in deployments(served).values():
        assert deployment.status.updated_replicas == deployment.spec.replicas
        assert deployment.status.observed_generation == deployment.metadata.generation
    print(f"restart of 3 zones: {took:.1f}s")
    report, status = reconcile(served)
    assert status["phase"] == "Healthy", status
    rewritten = [r for c in report.clusters.values() for r in c.updated if r.name == "rolling"]
    assert rewritten == [], "the reconciler took the restart for drift"
    assert {c: (d.spec.template.metadata.annotations or {}).get(RESTARTED_AT_ANNOTATION)
            for c, d in deployments(served).items()} == stamps


def test_a_restart_left_by_a_stopped_server_is_refused_to_others_then_taken_over(
        served: Served) -> None:
    """A server claimed a restart, rolled the first zone and stopped (its claim, written
    as it would, renewed 2 minutes ago): a restart through this server is refused while the
    claim lives; once stale, this server's resumer takes it over and finishes every zone."""
    host, placed = served.gateway.host, deployments(served)
    first = min(served.zone_of[c] for c in placed)
    at = iso_time(time.time())
    for cluster in (c for c in placed if served.zone_of[c] == first):
        member = Connection(cluster, cluster, served.kubeconfig)
        try:
            write.apply(member, restart_patch(Workload(cluster, first, "Deployment", PROJECT,
                                                       "rolling"), at),
                        manager=RESTART_MANAGER)
        finally:
            member.close()
    gone = Claim(at, "dana", "gone-server/1", iso_time(time.time()))
    write.apply(host, claim_patch(cr_ref(APP), gone), manager=RESTART_MANAGER)
    refused = CliRunner().invoke(cli, ["restart", REF], env=served.env)
    assert refused.exit_code != 0 and "is running in gone-server/1" in refused.output, \
        refused.output
    old = Claim(at, "dana", "gone-server/1", iso_time(time.time() - 120))
    write.apply(host, claim_patch(cr_ref(APP), old), manager=RESTART_MANAGER)
    wait_for(lambda: served.apps.annotated(
        CLAIM_AT).get(APP, {}).get(CLAIM_RENEWED) == old.renewed, 30,
             "the server's watch to see the stale claim")
    before = len(events(served))
    assert RestartResumer(served.gateway, served.apps).scan() == [APP]
    wait_for(lambda: any(
        e.startswith("RestartComplete") for e in events(served)[before:]), 90,
             "the restart taken over to complete", describe=lambda: str(events(served)[before:]))
    reasons = [e.split(":")[0] for e in events(served)[before:]]
    assert reasons == ["RestartResumed", "RestartZone", "RestartZone", "RestartZone",
                       "RestartComplete"], reasons
    assert "from gone-server/1" in events(served)[before]
    assert {c: (d.spec.template.metadata.annotations or {}).get(RESTARTED_AT_ANNOTATION)
            for c, d in deployments(served).items()} == {c: at for c in placed}
    wait_for(lambda: claim_of(
        read.get(host, cr_ref(APP))) is None, 30, "the claim taken over to be released")


def image_by_zone(served: Served) -> dict[str, str]:
    return {served.zone_of[c]: d.spec.template.spec.containers[0].image.rsplit(":", 1)[1]
            for c, d in deployments(served).items()}


def test_a_paused_rollout_holds_the_next_zone_until_resumed(served: Served) -> None:
    paused = CliRunner().invoke(cli, ["rollout", "pause", REF], env=served.env)
    assert paused.exit_code == 0 and "paused by" in paused.output, paused.output
    write_spec(served.repo, "1.1.0", "rolling 1.1.0")
    _, status = reconcile(served)
    zones = sorted(image_by_zone(served))
    assert image_by_zone(served) == dict(zip(zones, ["1.1.0", "1.0.0", "1.0.0"], strict=True))
    dana = "system:serviceaccount:act-e2e-tenants:dana"
    assert status["rollout"]["pausedBy"] == dana, status["rollout"]
    assert status["phase"] == "Progressing" and f"paused by {dana}" in status["message"]
    client = ApiClient(served.url, served.env["PINCOMPILE_TOKEN"])
    wait_for(lambda: (
        client.app(*APP).rollout or {}).get("pausedBy") == dana, 15,
             "the API to show the paused rollout")

    resumed = CliRunner().invoke(cli, ["rollout", "resume", REF], env=served.env)
    assert resumed.exit_code == 0, resumed.output
    _, status = reconcile(served)
    assert set(image_by_zone(served).values()) == {"1.1.0"}
    assert status["rollout"]["phase"] == "Complete" and status["phase"] == "Healthy", status
    host = Connection("host", "host", served.kubeconfig)
    try:
        host_events = {e.reason for e in k8s.CoreV1Api(host.api).list_namespaced_event(
            PROJECT).items}
    finally:
        host.close()
    assert {"RolloutPaused", "RolloutResumed"} <= host_events


def test_another_projects_tenant_is_refused_and_audited(
        served: Served, caplog: pytest.LogCaptureFixture) -> None:
    env = {**served.env, "PINCOMPILE_TOKEN": served.erin}
    with caplog.at_level(logging.INFO, logger="pincompile.api.audit"):
        for args in (["restart", REF], ["rollout", "pause", REF]):
            refused = CliRunner().invoke(cli, args, env=env)
            assert refused.exit_code == 1 and "403" in refused.output, refused.output
            assert served.erin not in refused.output
    lines = [json.loads(r.getMessage()) for r in caplog.records
             if r.name == "pincompile.api.audit"]
    assert [(line["user"], line["method"], line["path"].rsplit("/", 1)[-1], line["status"])
            for line in lines] == [
        ("system:serviceaccount:act-e2e-tenants:erin", "POST", "restart", 403),
        ("system:serviceaccount:act-e2e-tenants:erin", "POST", "pause", 403)]


# -- rerun ------------------------------------------------------------------------------------
JOBSET = ("PinterestJobSet", PROJECT, "nightly")
JOBSET_SPEC = f"""\
apiVersion: pincompute.io/v1
kind: PinterestJobSet
metadata: {{name: nightly, project: {PROJECT}}}
spec:
  completions: 2
  parallelism: 2
  tier: ondemand
  placement: {{regions: [us-east-1]}}
  template:
    containers:
      - name: main
        image: registry.internal/act-shop/nightly:1
        resources: {{cpu: 100m, memory: 128Mi}}
"""


def nightly_uid(served: Served, cluster: str) -> str:
    member = Connection(cluster, cluster, served.kubeconfig)
    try:
        return str(k8s.BatchV1Api(member.api).read_namespaced_job("nightly", PROJECT)
                   .metadata.uid)
    finally:
        member.close()


def watch_completed(served: Served, cluster: str, *, other_than: str | None = None,
                    timeout: int = 90) -> str:
    """Watch ``cluster``'s Job ``nightly`` until one (other than the Job ``other_than``)
    has completed every index; its uid."""
    member = Connection(cluster, cluster, served.kubeconfig)
    try:
        stream = watch.Watch()
        for event in stream.stream(k8s.BatchV1Api(member.api).list_namespaced_job, PROJECT,
                                   field_selector="metadata.name=nightly",
                                   timeout_seconds=timeout):
            job = event["object"]
            if event["type"] != "DELETED" and job.metadata.uid != other_than \
                    and (job.status.succeeded or 0) == job.spec.completions:
                stream.stop()
                return str(job.metadata.uid)
    finally:
        member.close()
    pytest.fail(f"no{' new' if other_than else ''} Job nightly completed in {cluster} "
                f"within {timeout}s", pytrace=False)


def test_rerun_runs_a_finished_jobsets_job_again_and_records_it(served: Served) -> None:
    (served.repo / "apps" / PROJECT / "nightly.yaml").write_text(JOBSET_SPEC)
    git(served.repo, "add", "-A")
    git(served.repo, "commit", "-qm", "nightly")
    _, status = reconcile(served, app=JOBSET)
    placed = [c["name"] for c in status["clusters"]]
    assert len(placed) == 1, status
    cluster = placed[0]
    finished = watch_completed(served, cluster)
    client = ApiClient(served.url, served.env["PINCOMPILE_TOKEN"])
    wait_for(lambda: client.app(*JOBSET).clusters, 15, "the API to place the JobSet")

    ref = "/".join(JOBSET)
    done = CliRunner().invoke(cli, ["rerun", ref, "-o", "json"], env=served.env)
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["objects"] == [f"{cluster}: Job/{PROJECT}/nightly"]
    started = time.monotonic()
    again = watch_completed(served, cluster, other_than=finished)
    print(f"rerun: the new Job completed {time.monotonic() - started:.1f}s after the answer")
    wait_for(lambda: any(
        e.startswith("RerunStarted") for e in events(served, JOBSET)), 15,
             "RerunStarted in the events", describe=lambda: str(events(served, JOBSET)))
    dana = "system:serviceaccount:act-e2e-tenants:dana"
    assert [e.split(":")[0] for e in events(served, JOBSET)] == ["RerunRequested",
                                                                 "RerunStarted"]
    requested, recreated = events(served, JOBSET)
    assert requested.startswith(f"RerunRequested: {dana}: deleting and creating again")
    assert recreated == (f"RerunStarted: created again: {cluster}: Job/{PROJECT}/nightly "
                       f"(rerun by {dana})")

    report, _ = reconcile(served, app=JOBSET)
    written = [r for c in report.clusters.values()
               for r in (*c.created, *c.updated, *c.replaced) if r.name == "nightly"]
    assert written == [], "the reconciler took the rerun Job for drift"
    assert nightly_uid(served, cluster) == again


# -- the same commands without --server: straight to the clusters with the kubeconfig -------
def direct_env(served: Served) -> dict[str, str | None]:
    return {"PINCOMPILE_SERVER": None, "PINCOMPILE_TOKEN": None,
            "KUBECONFIG": served.kubeconfig}


def same_both_ways(served: Served, args: list[str]) -> tuple[int, str]:
    """``args`` through the API (dana's token) and straight to the clusters give the same
    exit code and output (once the server's watches caught up); those."""
    cli_runner = CliRunner()
    found: dict[str, Any] = {}

    def same() -> bool:
        found["api"] = cli_runner.invoke(cli, args, env=served.env)
        started = time.monotonic()
        found["direct"] = cli_runner.invoke(cli, args, env=direct_env(served))
        found["seconds"] = time.monotonic() - started
        return bool((found["api"].exit_code, found["api"].stdout)
                    == (found["direct"].exit_code, found["direct"].stdout))

    wait_for(same, 20, f"{args} to print the same both ways", describe=lambda: (
        f"api: {found['api'].output}\ndirect: {found['direct'].output}"))
    print(f"{' '.join(args)} without --server: {found['seconds']:.2f}s")
    return found["direct"].exit_code, found["direct"].stdout


def test_without_server_get_prints_what_the_server_prints(served: Served) -> None:
    for fmt in ("table", "wide", "json", "name"):
        code, shown = same_both_ways(served, ["get", "apps", "-p", PROJECT, "-o", fmt])
        assert code == 0 and "rolling" in shown, shown
    code, shown = same_both_ways(served, ["get", "pods", REF, "-o", "json"])
    pods = json.loads(shown)["items"]
    assert code == 0 and sorted(p["cluster"] for p in pods) == sorted(deployments(served))
    assert all(p["phase"] == "Running" for p in pods), pods
    assert same_both_ways(served, ["get", "pods", "-p", PROJECT, "-o", "name"])[0] == 0
    assert same_both_ways(served, ["get", "apps", "-p", PROJECT, "-l", "tier=frontend",
                                   "-o", "name"]) == (0, "")
    assert same_both_ways(served, ["get", "pods", f"PinApp/{PROJECT}/nope"])[0] == 1


def test_without_server_logs_follow_streams_new_lines_from_every_cluster(
        served: Served) -> None:
    code, shown = same_both_ways(served, ["logs", REF, "--tail", "0"])
    assert (code, shown) == (0, "")
    done = CliRunner().invoke(cli, ["logs", REF, "--tail", "1"], env=direct_env(served))
    assert done.exit_code == 0, done.output
    placed = set(deployments(served))
    assert {line.split("/")[0] for line in done.stdout.splitlines()} == placed, done.stdout
    env = {k: v for k, v in {**os.environ, **direct_env(served)}.items() if v is not None}
    opened = time.time()
    follow = subprocess.Popen([str(Path(sys.executable).parent / "pincompile"), "logs", REF,
                               "-f", "--tail", "0", "--timestamps"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = follow.stdout
    assert out is not None
    latency: dict[str, float] = {}
    give_up = threading.Timer(30, follow.kill)  # a stream that never brings them all
    give_up.start()
    try:
        for line in out:
            prefix, written, _ = line.decode().split(" ", 2)
            if datetime.fromisoformat(written).timestamp() > opened:  # new since -f began
                latency.setdefault(prefix.split("/")[0], time.time()
                                   - datetime.fromisoformat(written).timestamp())
            if set(latency) == placed:
                break
        assert set(latency) == placed, latency
        print(f"logs -f without --server: a new line written -> printed (s): {latency}")
    finally:
        give_up.cancel()
        interrupted = time.monotonic()
        follow.send_signal(signal.SIGINT)
        # it exits in about a second here; under load its clean-up once held it past 30 s:
        # it ends GRACE_SECONDS after Ctrl-C at the latest (bounded_interrupt), plus load
        assert follow.wait(GRACE_SECONDS + 15) == 0
        print(f"logs -f without --server: Ctrl-C -> exit {time.monotonic() - interrupted:.2f} s")


def test_without_server_exec_runs_the_command_and_exits_with_its_code(
        served: Served) -> None:
    done = CliRunner().invoke(cli, ["exec", REF, "--", "echo", "hi"], env=direct_env(served))
    assert (done.exit_code, done.stdout) == (0, "hi\n"), done.output
    assert done.stderr.split()[1].split("/")[0] in deployments(served), done.stderr
    cluster = sorted(deployments(served))[-1]
    failed = CliRunner().invoke(cli, ["exec", REF, "--cluster", cluster, "-q", "--", "sh",
                                      "-c", "echo oops >&2; exit 7"], env=direct_env(served))
    assert (failed.exit_code, failed.stdout, failed.stderr) == (7, "", "oops\n")


def test_without_server_actions_act_with_the_kubeconfig_and_wait_for_the_restart(
        served: Served) -> None:
    assert same_both_ways(served, ["rollout", "resume", REF]) == (
        0, f"{REF}: the rollout of {REF} is not paused\n")
    paused = CliRunner().invoke(cli, ["rollout", "pause", REF], env=direct_env(served))
    assert paused.exit_code == 0 and "rollout paused by kubeconfig:host" in paused.output
    host = Connection("host", "host", served.kubeconfig)
    try:
        assert pause.paused_by(read.get(host, cr_ref(APP))) == "kubeconfig:host"
    finally:
        host.close()
    assert CliRunner().invoke(cli, ["rollout", "resume", REF],
                              env=direct_env(served)).exit_code == 0

    before = {c: (d.spec.template.metadata.annotations or {}).get(RESTARTED_AT_ANNOTATION)
              for c, d in deployments(served).items()}
    started = time.monotonic()
    done = CliRunner().invoke(cli, ["restart", REF, "--store", served.store],
                              env=direct_env(served))
    assert done.exit_code == 0, done.output
    print(f"restart of 3 zones without --server: {time.monotonic() - started:.1f}s")
    after = {c: (d.spec.template.metadata.annotations or {}).get(RESTARTED_AT_ANNOTATION)
             for c, d in deployments(served).items()}
    assert len(set(after.values())) == 1 and set(after.values()) != set(before.values())
    for deployment in deployments(served).values():  # rolled out before the command ended
        assert deployment.status.updated_replicas == deployment.spec.replicas
    assert any(e.startswith("RestartComplete") and "kubeconfig:host" in e
               for e in events(served)), events(served)


def test_without_server_events_and_history_read_the_store(served: Served) -> None:
    for command in ("events", "history"):
        args = [command, REF, "-o", "json", "--store", served.store]
        via_api = CliRunner().invoke(cli, args[:-2], env=served.env)
        direct = CliRunner().invoke(cli, args, env=direct_env(served))
        assert direct.exit_code == 0, direct.output
        # without a server the clusters' Events are read too: the store's are all there
        # (an Event seen again since has a newer count and time)
        fields = ("cluster", "source", "reason", "object", "revision", "appliedAt")
        kept, found = ({tuple(i.get(f) for f in fields) for i in json.loads(out)["items"]}
                       for out in (via_api.stdout, direct.stdout))
        assert kept <= found, kept - found
        if command == "events":  # the direct restart's, recorded in the store it was given
            assert "RestartComplete" in direct.stdout, direct.stdout


# -- apply narrowed to some apps ---------------------------------------------------------------
OTHER_APP = SPEC.replace("name: rolling", "name: sidekick").replace("IMAGE", "2.0.0").replace(
    "  rollout: {strategy: zone-by-zone, healthTimeout: 30s}\n", "")


def managed_outside(served: Served, project: str) -> dict[str, int]:
    """Per member cluster, how many objects pincompile manages outside ``project``."""
    counts = {}
    for cluster in served.zone_of:
        member = Connection(cluster, cluster, served.kubeconfig)
        try:
            counts[cluster] = sum(1 for key in read_live(member) if key[1] != project
                                  and not (key[0] == "Namespace" and key[2] == project))
        finally:
            member.close()
    return counts


def sidekicks(served: Served) -> int:
    out = 0
    for cluster in served.zone_of:
        member = Connection(cluster, cluster, served.kubeconfig)
        try:
            out += len(k8s.AppsV1Api(member.api).list_namespaced_deployment(
                PROJECT, label_selector="pincompute.io/app=sidekick").items)
        finally:
            member.close()
    return out


def test_apply_narrowed_to_apps_writes_and_prunes_only_theirs(served: Served) -> None:
    apply = ["apply", str(served.repo), "--no-wait", "-q", "--kubeconfig", served.kubeconfig]
    (served.repo / "apps" / PROJECT / "sidekick.yaml").write_text(OTHER_APP)
    git(served.repo, "add", "-A")
    git(served.repo, "commit", "-qm", "sidekick")
    outside = managed_outside(served, PROJECT)
    done = CliRunner().invoke(cli, [*apply, f"PinApp/{PROJECT}/sidekick"])
    assert done.exit_code == 0, done.output
    assert "0 pruned" in done.output and sidekicks(served) == 3, done.output

    (served.repo / "apps" / PROJECT / "sidekick.yaml").unlink()
    git(served.repo, "commit", "-qam", "no sidekick")
    kept = CliRunner().invoke(cli, [*apply, REF])  # sidekick is not rolling: not pruned
    assert kept.exit_code == 0 and "0 pruned" in kept.output, kept.output
    assert sidekicks(served) == 3
    missing = CliRunner().invoke(cli, [*apply, f"PinApp/{PROJECT}/sidekick"])
    assert missing.exit_code == 2 and "no app" in missing.output, missing.output

    pruned = CliRunner().invoke(cli, [*apply, "-p", PROJECT])  # sidekick is in the project
    assert pruned.exit_code == 0, pruned.output
    assert "0 pruned" not in pruned.output and sidekicks(served) == 0, pruned.output
    assert managed_outside(served, PROJECT) == outside, "an object of another app was pruned"
    client = ApiClient(served.url, served.env["PINCOMPILE_TOKEN"])
    wait_for(lambda: (
        names := {a.name for a in client.apps(project=PROJECT)}) and "rolling" in names
        and "sidekick" not in names, 15, "the host to drop sidekick's resource and keep rolling's")
