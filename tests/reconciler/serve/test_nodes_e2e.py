"""Node remediation and rotation in ``pincompile serve``, end to end on the exclusive
fleet's ``heal-a`` (serve reconciles from this module's repository, and the tests break,
drain and replace the cluster's nodes: neither may touch the shared session fleet).

One member cluster, ``heal-a``, of three kwok nodes (two more are added for the circuit
breaker's 60 %); its Cluster spec's remediation policy drains a node after Ready=False for
10 s or KernelDeadlock=True for 5 s, at most one drain at a time per zone, with the
circuit open above 40 % unhealthy. The app ``web`` runs 3 reserved replicas behind its
PodDisruptionBudget (maxUnavailable: 1). The real Eviction API and the budget decide what
moves; the tests only set node conditions (reconciler/fleet/replacement.py) and watch.
The tests run in file order and build on what the previous one left.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from rbac_rules import allowed, grants

from reconciler.clients.connect import Connection, RetryPolicy
from reconciler.clients.record import read_requests
from reconciler.fleet import fleet as fleet_mod
from reconciler.fleet.replacement import add_nodes, heal, replacing, set_condition
from reconciler.remediation import drain
from reconciler.serve.webhooks import GENERIC_SIGNATURE_HEADER, sign
from tests.conftest import api_clients
from tests.support.nodes import NodeWatch, ReadyWatch, events
from tests.support.serve import REPO_ROOT, ServeProcess, SpecRepo, http
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e
FIXTURE = Path(__file__).parents[1] / "fixtures" / "nodes"
CLUSTER = "heal-a"
SECRET = "nodes-e2e"
WEB = "pincompute.io/app=web"
TRAIN = """apiVersion: pincompute.io/v1
kind: PinterestJobSet
metadata:
  name: train
  project: shop
  annotations: {pod-complete.stage.kwok.x-k8s.io/delay: "60s"}
spec:
  completions: 3
  parallelism: 3
  tier: preemptible
  template:
    containers:
      - name: worker
        image: registry.internal/shop/train:1.0.0
        resources: {cpu: 500m, memory: 256Mi}
"""


@pytest.fixture(scope="module")
def nodes_fleet(exclusive_fleet: fleet_mod.FleetState) -> fleet_mod.FleetState:
    """The exclusive fleet: its ``heal-a`` is this module's alone (its nodes are broken,
    drained and replaced)."""
    return exclusive_fleet


@pytest.fixture(scope="module")
def kube(nodes_fleet: fleet_mod.FleetState) -> Iterator[Callable[[str], Any]]:
    with api_clients(nodes_fleet.kubeconfig) as get:
        yield get


@pytest.fixture(scope="module")
def general(kube: Callable[[str], Any]) -> list[str]:
    """The cluster's own three nodes, by name."""
    nodes = k8s.CoreV1Api(kube(CLUSTER)).list_node(label_selector="pincompute.io/node-pool")
    return sorted(n.metadata.name for n in nodes.items)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("nodes-e2e")


@pytest.fixture(scope="module")
def repo(workdir: Path) -> SpecRepo:
    return SpecRepo(workdir / "repo", specs=FIXTURE)


def start_serve(fleet: fleet_mod.FleetState, repo: SpecRepo, workdir: Path) -> ServeProcess:
    return ServeProcess(
        repo.bare, workdir / "audit.jsonl", "--kubeconfig", str(fleet.kubeconfig),
        "--audit-log", str(workdir / "audit.jsonl"), "--nodes-interval", "1s",
        "--resync", "30m", "--lease-duration", "8s", "--renew-deadline", "5s",
        "--retry-period", "1s", "--open-status", identity="nodes-e2e", real=True,
        env={"PINCOMPILE_WEBHOOK_SECRET": SECRET,
             "PINCOMPILE_RECORD_REQUESTS": str(workdir / "requests.jsonl")})


@pytest.fixture(scope="module")
def serve(nodes_fleet: fleet_mod.FleetState, kube: Callable[[str], Any], general: list[str],
          repo: SpecRepo, workdir: Path) -> Iterator[ServeProcess]:
    """serve's first pass, with every pod on the first node (the others cordoned until
    the apps run), and two more nodes: five in all."""
    member = kube(CLUSTER)
    core = k8s.CoreV1Api(member)
    for name in general[1:]:
        core.patch_node(name, {"spec": {"unschedulable": True}})
    process = start_serve(nodes_fleet, repo, workdir)
    try:
        web = ReadyWatch(member, "shop", WEB)
        wait_for(lambda: web.ready_now == 3, 240, "web's 3 pods Ready")
        web.stop()
        for name in general[1:]:
            core.patch_node(name, {"spec": {"unschedulable": None}})
        add_nodes(member, 2)
        yield process
    finally:
        process.stop()


def metric(base: str, line_start: str) -> float | None:
    """The value of the first /metrics line starting with ``line_start``."""
    status, body = http("GET", f"{base}/metrics")
    assert status == 200
    for line in body.decode().splitlines():
        if line.startswith(line_start):
            return float(line.rsplit(" ", 1)[1])
    return None


def test_an_unhealthy_node_is_drained_in_time_and_the_next_one_in_its_zone_waits(
        serve: ServeProcess, kube: Callable[[str], Any], general: list[str],
        nodes_fleet: fleet_mod.FleetState) -> None:
    member, host = kube(CLUSTER), kube("host")
    first, second = general[0], general[1]
    web = ReadyWatch(member, "shop", WEB)
    wait_for(lambda: web.ready_now == 3 and set(web.nodes.values()) == {first}, 60,
             f"web's 3 pods Ready on {first}")
    web.reset()
    nodes = NodeWatch(member)
    signalled = time.monotonic()
    set_condition(member, first, "KernelDeadlock", "True")
    set_condition(member, second, "KernelDeadlock", "True")

    wait_for(lambda: first in nodes.cordoned, 60, f"{first} cordoned")
    took = nodes.cordoned[first] - signalled
    # after: 5s, from the condition's lastTransitionTime (to the second), then one round
    assert 4 <= took < 5 + 10, f"cordoned {took:.1f}s after the signal (after: 5s)"
    print(f"{first} cordoned {took:.1f}s after its signal (after: 5s)")
    drained = wait_for(lambda: nodes.phase_since(first, "drained"), 180,
                       f"{first} drained")
    wait_for(lambda: second in nodes.cordoned, 60, f"{second} cordoned next")
    assert nodes.cordoned[second] >= drained, "the second drain started before the first ended"
    waited = [e.message for e in events(member, "default", name=second,
                                        reason="RemediationWaiting")]
    assert any(f"node {first} in zone heal-1a is being drained" in m for m in waited), waited
    wait_for(lambda: nodes.phase_since(second, "drained"), 180, f"{second} drained")
    wait_for(lambda: web.ready_now == 3 and not {first, second} & set(web.nodes.values()),
             120, "web's 3 pods Ready on the other nodes")
    assert web.fewest is not None and web.fewest >= 2, \
        f"{web.fewest} Ready: the budget (maxUnavailable 1) did not hold"
    for name in (first, second):
        drains = events(member, "default", name=name, reason="RemediationDrain")
        assert len(drains) == 1, [e.message for e in drains]
    moved = [e.message for e in events(host, "shop", name="web", reason="MovedOffNode")]
    assert sum(f"moved off node {first}: remediation" in m for m in moved) >= 3, moved
    store = f"sqlite:///{serve.log.with_suffix('.db')}"
    wait_for(lambda: f"moved off node {first}: remediation" in subprocess.run(
        [sys.executable, "-m", "pincompile.cli", "events", "PinApp/shop/web", "-o", "json",
         "--kubeconfig", str(nodes_fleet.kubeconfig), "--store", store],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=120).stdout, 120,
        "the app's timeline (pincompile events) to show the move", interval=2.0)

    heal(member, first, "KernelDeadlock")
    heal(member, second, "KernelDeadlock")
    wait_for(lambda: {first, second} <= set(nodes.uncordoned), 60, "both uncordoned")
    web.stop()
    nodes.stop()


def test_sixty_percent_unhealthy_opens_the_circuit_and_recovery_closes_it(
        serve: ServeProcess, kube: Callable[[str], Any]) -> None:
    member, host = kube(CLUSTER), kube("host")
    names = sorted(n.metadata.name for n in k8s.CoreV1Api(member).list_node().items)
    assert len(names) == 5, names
    broken = names[-3:]
    drains = metric(serve.base, 'pincompile_serve_remediation_actions_total{action="drain"')
    nodes = NodeWatch(member)
    _all_at_once(lambda n: set_condition(member, n, "Ready", "False"), broken)

    opened = wait_for(lambda: events(host, "default", name=CLUSTER,
                                     reason="RemediationCircuitOpen"), 60, "the Warning")
    assert opened[-1].type == "Warning" and "3 of 5 nodes" in opened[-1].message
    scope = 'pincompile_serve_remediation_circuit_open{cluster="heal-a",scope="cluster"}'
    wait_for(lambda: metric(serve.base, scope) == 1.0, 30, "the circuit metric")
    for name in broken:  # each held its 10 s, and the breaker held it back
        wait_for(lambda n=name: any("maxUnhealthy" in e.message for e in events(
            member, "default", name=n, reason="RemediationWaiting")), 60, f"{name} waits")
    assert not nodes.cordoned, nodes.cordoned

    _all_at_once(lambda n: heal(member, n, "Ready"), broken)
    wait_for(lambda: events(host, "default", name=CLUSTER,
                            reason="RemediationCircuitClosed"), 60, "the circuit closed")
    wait_for(lambda: metric(serve.base, scope) == 0.0, 30, "the circuit metric back to 0")
    assert not nodes.cordoned, nodes.cordoned
    assert metric(serve.base, 'pincompile_serve_remediation_actions_total{action="drain"') \
        == drains
    nodes.stop()


def test_rotating_the_cluster_replaces_each_node_once_while_apps_keep_their_budget(
        serve: ServeProcess, kube: Callable[[str], Any], general: list[str],
        nodes_fleet: fleet_mod.FleetState, repo: SpecRepo, workdir: Path) -> None:
    member, host = kube(CLUSTER), kube("host")
    _retire_extra_nodes(nodes_fleet, member, general)
    sha = repo.commit("a training job that runs through the rotation",
                      {"apps/shop/train.yaml": TRAIN})
    _push(serve.base, sha)
    batch = k8s.BatchV1Api(member)
    wait_for(lambda: (_job(batch, "train").status.active or 0) == 3, 120, "train running")
    web = ReadyWatch(member, "shop", WEB)
    wait_for(lambda: web.ready_now == 3, 60, "web Ready")
    web.reset()
    nodes = NodeWatch(member)
    restarted: list[ServeProcess] = []
    with replacing(member, "v2") as replacer:
        started = time.monotonic()
        asked = subprocess.run(
            [sys.executable, "-m", "pincompile.cli", "rotate", CLUSTER, "--kubeconfig",
             str(nodes_fleet.kubeconfig)], capture_output=True, text=True, cwd=REPO_ROOT,
            timeout=120)
        assert asked.returncode == 0, asked
        try:
            wait_for(lambda: _states(host).count("Replaced") == 1
                     and any(s in ("Draining", "Drained", "Removed") for s in _states(host)),
                     300, "one node replaced and the next under way")
            serve.stop()  # SIGKILL, halfway
            restarted.append(start_serve(nodes_fleet, repo, workdir))
            wait_for(lambda: _rotation(host).get("phase") == "Complete", 600,
                     "the rotation complete")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; rotation: {_rotation(host)}; replaced: "
                                 f"{replacer.replaced}; replacer errors: {replacer.errors}; "
                                 f"serve says: {_nodes_log(serve, *restarted)}") from None
        finally:
            for process in restarted:
                process.stop()
    took = time.monotonic() - started
    status = _rotation(host)
    assert [n["name"] for n in status["nodes"]] == general
    assert all(n["state"] == "Replaced" and n["version"] == "v2" for n in status["nodes"])
    assert nodes.deleted == dict.fromkeys(general, 1), nodes.deleted
    assert sorted(replacer.replaced) == general
    assert sorted(n["replacement"] for n in status["nodes"]) == sorted(replacer.replaced.values())
    assert web.fewest is not None and web.fewest >= 2, f"web fell to {web.fewest} Ready"
    wait_for(lambda: (_job(batch, "train").status.succeeded or 0) == 3, 300,
             "train completed")
    print(f"rotated {len(general)} nodes in {took:.1f}s (serve killed once); per node: "
          + ", ".join(f"{n['name']} {_seconds(n):.1f}s" for n in status["nodes"]))
    web.stop()
    nodes.stop()


def test_every_node_request_serve_made_is_allowed_by_the_shipped_rbac(
        serve: ServeProcess, workdir: Path) -> None:
    """The member requests of remediation and rotation are allowed by rbac-member.yaml
    with rbac-member-nodes.yaml, and every grant of the latter was needed by this run (but
    StatefulSets, which these tests do not run: the rotation reads them like
    Deployments)."""
    member = grants("rbac-member.yaml") + grants("rbac-member-nodes.yaml")
    requests = [r for r in read_requests(str(workdir / "requests.jsonl"))
                if r.cluster == CLUSTER]
    refused = sorted({str(r) for r in requests if not allowed(member, r)})
    assert not refused, "requests the shipped RBAC does not allow:\n" + "\n".join(refused)
    needed = {(r.verb, r.group, r.resource + (f"/{r.subresource}" if r.subresource else ""))
              for r in requests}
    idle = [p for g in grants("rbac-member-nodes.yaml") for p in g.pairs()
            if p not in needed and p != ("get", "apps", "statefulsets")]
    assert not idle, f"granted, never needed: {idle}"


def _nodes_log(*processes: ServeProcess) -> list[str]:
    """serve's log lines about nodes (remediation, rotation), the last ones."""
    lines = [line for p in processes for line in p.log.read_text().splitlines()
             if "pincompile.nodes" in line or "Traceback" in line or "Error" in line]
    return lines[-30:]


def _all_at_once(act: Callable[[str], None], names: list[str]) -> None:
    threads = [threading.Thread(target=act, args=(n,)) for n in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _push(base: str, sha: str) -> None:
    body = json.dumps({"ref": "refs/heads/main", "after": sha}).encode()
    status, answer = http("POST", f"{base}/webhooks/generic", body, {
        "Content-Type": "application/json", "X-Pincompile-Delivery": sha,
        GENERIC_SIGNATURE_HEADER: sign(SECRET.encode(), body)})
    assert status == 202, answer


def _job(batch: Any, name: str) -> Any:
    try:
        return batch.read_namespaced_job(name, "shop")
    except k8s.exceptions.ApiException:
        return k8s.V1Job(status=k8s.V1JobStatus())


def _rotation(host: Any) -> dict[str, Any]:
    cr = k8s.CustomObjectsApi(host).get_cluster_custom_object(
        "pincompute.io", "v1", "clusters", CLUSTER)
    return dict((cr.get("status") or {}).get("rotation") or {})


def _states(host: Any) -> list[str]:
    return [str(n.get("state")) for n in _rotation(host).get("nodes") or []]


def _seconds(node: dict[str, Any]) -> float:
    from reconciler.clock import parse_time

    return (parse_time(node.get("since")) or 0.0) - (parse_time(node.get("startedAt")) or 0.0)


def _retire_extra_nodes(fleet: fleet_mod.FleetState, member: Any, general: list[str]) -> None:
    """Back to the cluster's own three nodes: the two added ones drained and deleted."""
    conn = Connection(CLUSTER, CLUSTER, str(fleet.kubeconfig), retry=RetryPolicy(attempts=1))
    try:
        extra = [n.metadata.name for n in k8s.CoreV1Api(member).list_node().items
                 if n.metadata.name not in general]
        for name in extra:
            drain.cordon(conn, name, {})
        for name in extra:
            wait_for(lambda n=name: drain.drain_step(conn, n).done, 120, f"{name} drained",
                     interval=1.0)
            drain.delete_node(conn, name)
    finally:
        conn.close()
