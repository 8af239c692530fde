"""The gateway against the fleet's real host API server: a service account's token is
checked with TokenReview, every call with SubjectAccessReview under the host's RBAC, and
app status comes from a watch, so warm reads make no request. Then an app's pods in the
member clusters (a watch there too), its logs, streamed from the member API servers, and
exec sessions bridged to theirs, through a real HTTP server, as `pincompile get|logs|exec`
use them."""

from __future__ import annotations

import contextlib
import json
import logging
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import urllib3
import yaml
from click.testing import CliRunner
from fastapi.testclient import TestClient
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from pincompile.cli import cli as cli_main
from reconciler.api.access import HostAccess, RateLimits
from reconciler.api.app import Gateway, create_app
from reconciler.api.client import ApiClient, ApiError
from reconciler.api.exec_protocol import ExecLimits
from reconciler.api.logs import LogLimits
from reconciler.api.pods import MemberPods
from reconciler.api.sources import HostApps
from reconciler.clients.connect import Connection
from reconciler.fleet import fleet as fleet_mod
from reconciler.fleet import forward_responder
from reconciler.fleet.clusters import ClusterSpec
from reconciler.host import write_status
from reconciler.store import Store
from tests.support import api_fleet
from tests.support.forwarding import exchange, port_forwarding
from tests.support.serve import REPO_ROOT
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e
TENANTS = "api-e2e-tenants"


def pin_app(project: str, name: str) -> dict[str, Any]:
    """``web``'s spec labels it tier=frontend."""
    return api_fleet.pin_app(project, name, labels={"tier": "frontend"} if name == "web"
                             else {})


def ready(phase: str) -> dict[str, Any]:
    return {"phase": phase, "ready": "1/1", "replicas": 1, "readyReplicas": 1,
            "clusters": [{"name": "east", "phase": phase, "replicas": 1, "readyReplicas": 1}]}


@pytest.fixture(scope="module")
def host(fleet: fleet_mod.FleetState) -> Iterator[Connection]:
    with api_fleet.host_cluster(fleet) as conn:
        yield conn


@pytest.fixture(scope="module")
def alice_token(host: Connection) -> str:
    """Service account ``alice`` may get and list PinApps, and get their logs, in project
    ``api-shop`` only."""
    api_fleet.create_namespaces(host, TENANTS, "api-shop", "api-ads")
    return api_fleet.tenant_token(host, TENANTS, "alice", "api-shop",
                                  api_fleet.tenant_rules("pincompute-app-debugger"))


@pytest.fixture(scope="module")
def carol_token(host: Connection, alice_token: str) -> str:
    """``carol`` may read PinApps in ``api-shop`` but not their logs."""
    return api_fleet.tenant_token(host, TENANTS, "carol", "api-shop", [
        {"apiGroups": ["pincompute.io"], "resources": ["pinapps"], "verbs": ["get", "list"]}])


def test_a_tenant_sees_and_reads_only_its_project_from_a_warm_cache(
        host: Connection, alice_token: str, tmp_path: Path) -> None:
    custom = k8s.CustomObjectsApi(host.api)
    for project, name in (("api-shop", "web"), ("api-ads", "secret")):
        custom.create_namespaced_custom_object("pincompute.io", "v1", project, "pinapps",
                                               pin_app(project, name))
        write_status(host, ("PinApp", project, name), ready("Healthy"))
    apps = HostApps(host)
    store = Store.open(f"sqlite:///{tmp_path / 'insight.db'}")
    try:
        apps.wait_synced()
        client = TestClient(create_app(Gateway(apps=apps, store=store,
                                               access=HostAccess(host, ttl=30),
                                               limits=RateLimits(100, 100))))
        auth = {"Authorization": f"Bearer {alice_token}"}
        listed = client.get("/api/v1/apps", headers=auth).json()["items"]
        assert [(a["project"], a["name"]) for a in listed if a["project"].startswith("api-")] \
            == [("api-shop", "web")]
        assert client.get("/api/v1/apps/PinApp/api-ads/secret", headers=auth).status_code == 403
        selected = client.get("/api/v1/apps", headers=auth, params={
            "selector": "tier=frontend,pincompute.io/project=api-shop"}).json()["items"]
        assert [a["name"] for a in selected] == ["web"]
        assert client.get("/api/v1/apps", headers={"Authorization": "Bearer forged"}
                          ).status_code == 401

        write_status(host, ("PinApp", "api-shop", "web"), ready("Degraded"))
        wait_for(lambda: client.get("/api/v1/apps/PinApp/api-shop/web", headers=auth
                                    ).json()["phase"] == "Degraded", 10,
                 "the watch to bring the new status", interval=0.2)

        before = sum(host.stats.by_verb.values())
        for _ in range(20):
            assert client.get("/api/v1/apps/PinApp/api-shop/web", headers=auth
                              ).status_code == 200
        assert sum(host.stats.by_verb.values()) == before, "warm reads went to the host"
    finally:
        apps.close()
        store.close()


# -- pods and logs, through a real HTTP server ------------------------------------------------
WEB = ("PinApp", "api-shop", "web")
LOG_LINE = re.compile(r"^(?P<prefix>\S+/\S+/main) (?P<time>\S+Z) pincompile fleet: pod log line "
                      r"\d+$")


EXEC_LIMITS = ExecLimits(sessions_per_user=1, idle_seconds=3, message_bytes=1024)


@dataclass
class Served:
    url: str
    gateway: Gateway
    pods: MemberPods
    clusters: list[str]


@pytest.fixture(scope="module")
def served(fleet: fleet_mod.FleetState, fleet_specs: dict[str, ClusterSpec], host: Connection,
           alice_token: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The API on a real uvicorn server, an app ``web`` with one pod in each of up to three
    schedulable member clusters (labelled as pincompile labels an app's pods)."""
    clusters = sorted(s.name for s in fleet_specs.values() if s.schedulable)[:3]
    for name in clusters:
        api_fleet.run_app_pod(fleet, fleet_specs[name].context, WEB, [
            {"name": "main", "image": "registry.internal/api-e2e/web:1"}])
    with contextlib.suppress(ApiException):  # the first test made it already
        k8s.CustomObjectsApi(host.api).create_namespaced_custom_object(
            "pincompute.io", "v1", WEB[1], "pinapps", pin_app(WEB[1], WEB[2]))
    write_status(host, WEB, {**ready("Healthy"), "clusters": [
        {"name": c, "phase": "Healthy", "replicas": 1, "readyReplicas": 1} for c in clusters]})
    apps = HostApps(host)
    pods = MemberPods(str(fleet.kubeconfig),
                      lambda: {s.name: s.context for s in fleet_specs.values()})
    store = Store.open(f"sqlite:///{tmp_path_factory.mktemp('api') / 'insight.db'}")
    gateway = Gateway(apps=apps, store=store, access=HostAccess(host, ttl=30),
                      limits=RateLimits(100, 100), pods=pods,
                      log_limits=LogLimits(streams_per_user=1, seconds=60),
                      exec_limits=EXEC_LIMITS)
    apps.wait_synced()
    try:
        with api_fleet.served_locally(create_app(gateway)) as url:
            yield Served(url, gateway, pods, clusters)
    finally:
        apps.close()
        pods.close()
        store.close()


def test_an_apps_pods_come_from_every_member_cluster_and_warm_reads_ask_none(
        served: Served, alice_token: str, carol_token: str) -> None:
    client = ApiClient(served.url, alice_token)
    found = client.pods(*WEB)
    assert sorted(p.cluster for p in found.items) == served.clusters, found
    assert found.unreadable == []
    for pod in found.items:
        assert (pod.phase, pod.ready, pod.node != "") == ("Running", "1/1", True), pod
        assert [(c.name, c.state) for c in pod.containers] == [("main", "Running")]
    raw = urllib3.request("GET", f"{served.url}/api/v1/apps/PinApp/api-shop/web/pods",
                          headers={"Authorization": f"Bearer {carol_token}"})
    assert raw.status == 200 and b"managedFields" not in raw.data
    before = {n: sum(c.stats.by_verb.values()) for n, c in served.pods.members.items()}
    for _ in range(10):
        client.pods(*WEB)
    assert {n: sum(c.stats.by_verb.values()) for n, c in served.pods.members.items()} \
        == before, "warm pod reads went to the member clusters"


def test_logs_follow_merges_new_lines_from_every_cluster_and_a_gone_client_closes_them(
        served: Served, alice_token: str) -> None:
    client = ApiClient(served.url, alice_token)
    opened = time.time()
    lines = client.logs(*WEB, follow=True, tail_lines=1, timestamps=True)
    latencies: dict[str, list[float]] = {c: [] for c in served.clusters}
    deadline = time.monotonic() + 30
    for line in lines:
        arrived = time.time()
        match = LOG_LINE.match(line.decode().rstrip("\n"))
        assert match, line
        written = datetime.fromisoformat(match["time"]).timestamp()
        if written > opened:  # a line written after the stream opened: a new one
            latencies[match["prefix"].split("/")[0]].append(arrived - written)
        if all(len(v) >= 2 for v in latencies.values()) or time.monotonic() > deadline:
            break
    assert all(latencies.values()), f"new lines did not arrive from every cluster: {latencies}"
    print(f"log line written -> read by a following client (s): {latencies}")
    with pytest.raises(ApiError) as second:  # one stream per user in this gateway
        next(client.logs(*WEB, follow=True))
    assert second.value.status == 429
    lines.close()  # the client goes away: every upstream stream closes
    wait_for(lambda: (
        served.gateway.log_streams.open("system:serviceaccount:api-e2e-tenants:alice") == 0
        and not [t for t in threading.enumerate() if t.name.startswith("logs-")]), 15,
             "the log stream's slot and threads to be freed")


def test_logs_are_a_verb_of_their_own_and_the_cli_reads_through_the_api(
        served: Served, alice_token: str, carol_token: str) -> None:
    with pytest.raises(ApiError) as refused:
        next(ApiClient(served.url, carol_token).logs(*WEB))
    assert refused.value.status == 403
    cli = CliRunner()
    env = {"PINCOMPILE_SERVER": served.url, "PINCOMPILE_TOKEN": alice_token}
    done = cli.invoke(cli_main, ["logs", "PinApp/api-shop/web", "--tail", "2"], env=env)
    assert done.exit_code == 0, done.output
    prefixes = {line.split(" ", 1)[0].split("/")[0] for line in done.output.splitlines()}
    assert prefixes == set(served.clusters), done.output
    listed = cli.invoke(cli_main, ["get", "pods", "PinApp/api-shop/web", "-o", "name"], env=env)
    assert listed.exit_code == 0 and len(listed.output.splitlines()) == len(served.clusters)
    table = cli.invoke(cli_main, ["get", "apps", "-p", "api-shop"], env=env)
    assert table.exit_code == 0 and "PinApp/api-shop/web" in table.output, table.output
    for selector, shown in (("tier=frontend", "PinApp/api-shop/web\n"), ("tier!=frontend", "")):
        selected = cli.invoke(cli_main, ["get", "apps", "-l", selector, "-o", "name"], env=env)
        assert (selected.exit_code, selected.stdout) == (0, shown), selected.output
    missing = cli.invoke(cli_main, ["get", "pods", "PinApp/api-shop/nope"], env=env)
    assert missing.exit_code == 1, missing.output
    denied = cli.invoke(cli_main, ["logs", "PinApp/api-shop/web"],
                        env={**env, "PINCOMPILE_TOKEN": carol_token})
    assert denied.exit_code == 3 and carol_token not in denied.output, denied.output


# -- exec -------------------------------------------------------------------------------------
ALICE = "system:serviceaccount:api-e2e-tenants:alice"
EXEC = ["exec", "PinApp/api-shop/web"]


def audited(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [json.loads(r.getMessage()) for r in caplog.records
            if r.name == "pincompile.api.audit" and r.getMessage().startswith("{")]


def exec_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("exec-")]


def test_exec_runs_a_command_in_a_running_pod_and_exits_with_its_code(
        served: Served, alice_token: str, carol_token: str,
        caplog: pytest.LogCaptureFixture) -> None:
    cli = CliRunner()
    env = {"PINCOMPILE_SERVER": served.url, "PINCOMPILE_TOKEN": alice_token}
    caplog.set_level(logging.INFO, logger="pincompile.api.audit")
    done = cli.invoke(cli_main, [*EXEC, "--", "echo", "hi"], env=env)
    assert (done.exit_code, done.stdout) == (0, "hi\n"), done.output
    cluster = done.stderr.split()[1].split("/")[0]
    assert cluster in served.clusters, done.stderr
    failed = cli.invoke(cli_main, [*EXEC, "--cluster", served.clusters[-1], "-q", "--",
                                   "sh", "-c", "echo oops >&2; exit 7"], env=env)
    assert (failed.exit_code, failed.stdout, failed.stderr) == (7, "", "oops\n")
    denied = cli.invoke(cli_main, [*EXEC, "--", "echo", "hi"],
                        env={**env, "PINCOMPILE_TOKEN": carol_token})
    assert denied.exit_code == 3 and "403" in denied.output, denied.output
    assert carol_token not in denied.output
    nowhere = cli.invoke(cli_main, [*EXEC, "--", "true"],
                         env={**env, "PINCOMPILE_SERVER": "http://127.0.0.1:9"})
    assert nowhere.exit_code == 3 and "unreachable" in nowhere.output, nowhere.output
    records = audited(caplog)
    ran = next(r for r in records if r.get("command") == ["echo", "hi"] and r["status"] == 101)
    assert (ran["user"], ran["cluster"], ran["exitCode"], ran["ended"]) == \
        (ALICE, cluster, 0, "exited")
    assert any(r["status"] == 403 and r["user"].endswith(":carol")
               and r["path"].endswith("/web/exec") for r in records), records
    assert not exec_threads() and served.gateway.exec_sessions.open(ALICE) == 0


def test_exec_passes_stdin_to_the_command(served: Served, alice_token: str) -> None:
    env = {"PINCOMPILE_SERVER": served.url, "PINCOMPILE_TOKEN": alice_token}
    piped = CliRunner().invoke(cli_main, [*EXEC, "-i", "-q", "--", "head", "-c", "5"],
                               input="ping\nmore\n", env=env)
    assert (piped.exit_code, piped.stdout) == (0, "ping\n"), piped.output


def test_exec_sessions_are_bounded_and_a_gone_client_ends_its_bridge(
        served: Served, alice_token: str) -> None:
    client = ApiClient(served.url, alice_token)
    session = client.exec(*WEB, ["sleep", "30"])
    with pytest.raises(ApiError) as second:  # one session per user in this gateway
        client.exec(*WEB, ["true"])
    assert second.value.status == 429
    wait_for(lambda: bool(exec_threads()), 5, "the bridge's reader thread")
    session.close()  # the client goes: the member's exec and the thread end
    wait_for(lambda: (
        served.gateway.exec_sessions.open(ALICE) == 0 and not exec_threads()), 10,
             "the session's slot and thread to be freed")

    started = time.monotonic()
    idle = client.exec(*WEB, ["sleep", "30"])
    assert list(idle.output()) == [] and idle.exit_code is None
    assert idle.error.startswith("idle timeout"), idle.error
    assert EXEC_LIMITS.idle_seconds <= time.monotonic() - started < 10

    big = client.exec(*WEB, ["cat"], stdin=True)
    big.send_stdin(b"x" * 2048)
    assert list(big.output()) == [] and big.error.startswith("message too big"), big.error
    wait_for(lambda: not exec_threads(), 10, "every session's thread to end")



def test_the_hosts_rbac_says_who_reads_serves_status_and_metrics(
        host: Connection, alice_token: str) -> None:
    """contrib/serve/rbac-status-reader.yaml against the real API server's authorizer:
    the metrics reader may get /metrics only, a tenant neither path."""
    core, rbac = k8s.CoreV1Api(host.api), k8s.RbacAuthorizationV1Api(host.api)
    roles = yaml.safe_load_all((REPO_ROOT / "contrib/serve/rbac-status-reader.yaml").read_text())
    for role in roles:
        with contextlib.suppress(ApiException):  # a second run on the same fleet
            rbac.create_cluster_role(role)
    with contextlib.suppress(ApiException):
        core.create_namespaced_service_account(TENANTS, {"metadata": {"name": "prometheus"}})
        rbac.create_cluster_role_binding({
            "metadata": {"name": "api-e2e-prometheus-metrics"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "pincompile-serve-metrics-reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "prometheus",
                          "namespace": TENANTS}]})
    token = core.create_namespaced_service_account_token(
        "prometheus", TENANTS, {"spec": {"expirationSeconds": 3600}}).status.token
    access = HostAccess(host)
    prometheus, alice = access.authenticate(token), access.authenticate(alice_token)
    assert access.may_get(prometheus, "/metrics")
    assert not access.may_get(prometheus, "/status")
    assert not access.may_get(alice, "/metrics") and not access.may_get(alice, "/status")


# -- port-forward -------------------------------------------------------------------------------
def test_port_forward_reaches_a_pods_port_for_whoever_may_exec_and_for_no_one_else(
        served: Served, alice_token: str, carol_token: str) -> None:
    """kwok forwards every pod port to the fleet's responder: it echoes, and answers
    HTTP (reconciler/fleet/forward_responder.py)."""
    env: dict[str, str | None] = {"PINCOMPILE_SERVER": served.url,
                                  "PINCOMPILE_TOKEN": alice_token}
    with port_forwarding(["PinApp/api-shop/web", ":8080"], env) as port:
        assert exchange(port, b"ping\n") == b"ping\n"
        with urllib3.PoolManager() as http:
            answered = http.request("GET", f"http://127.0.0.1:{port}/", timeout=20)
        assert (answered.status, answered.data) == (200, forward_responder.BODY)
    cli = CliRunner()
    for token, status in ((carol_token, "403"), (None, "401")):
        denied = cli.invoke(cli_main, ["port-forward", "PinApp/api-shop/web", ":8080"],
                            env={**env, "PINCOMPILE_TOKEN": token})
        assert denied.exit_code == 3 and status in denied.output, denied.output
        assert "Forwarding" not in denied.output and "web-" not in denied.output
    wait_for(lambda: served.gateway.forward_sessions.open(ALICE) == 0 and not [
        t for t in threading.enumerate() if t.name.startswith("forward-")], 10,
             "every forwarded connection's slot and thread to be freed")
