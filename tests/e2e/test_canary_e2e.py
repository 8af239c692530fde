"""The canary on the fleet: ``serve --canary`` probes two member clusters every interval;
with one cluster's kube-scheduler stopped, that cluster's probes fail within one interval
(its launch SLI degrades, the other's does not), ``pincompile verify`` exits 1 naming it,
and the probes pass again once the scheduler is back. Only real control planes can show a
scheduler's absence; the session fleet is used and the scheduler always started again."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from reconciler.fleet import control
from reconciler.fleet.clusters import ClusterSpec
from tests.support.serve import EXAMPLES, REPO_ROOT, ServeProcess, SpecRepo, http
from tests.support.wait import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.fleet_alone(
    "stops a kube-scheduler, and its serve prunes what is not its own")]
INTERVAL, TIMEOUT = 20, 15
SRE = "canary-e2e-sre"


def probed(specs: dict[str, ClusterSpec]) -> list[str]:
    """Two member clusters that sell the reserved tier."""
    names = [s.name for s in specs.values()
             if s.schedulable and "reserved" in (s.tiers or ("reserved",))]
    assert len(names) >= 2, names
    return sorted(names)[:2]


@pytest.fixture
def canary_repo(fleet: Any, fleet_specs: dict[str, ClusterSpec], tmp_path: Path) -> SpecRepo:
    """The platform specs with the fleet's clusters, the platform project with its daemon
    (which puts the project's namespace in every cluster) and a canary policy for two
    clusters."""
    specs = tmp_path / "specs"
    shutil.copytree(EXAMPLES / "platform", specs / "platform",
                    ignore=shutil.ignore_patterns("clusters", "projects"))
    (specs / "platform" / "projects").mkdir()
    shutil.copy(EXAMPLES / "platform/projects/platform-system.yaml",
                specs / "platform/projects/platform-system.yaml")
    (specs / "apps/platform-system").mkdir(parents=True)
    shutil.copy(EXAMPLES / "apps/platform-system/goldpinger.yaml",
                specs / "apps/platform-system/goldpinger.yaml")
    (specs / "pincompile.yaml").write_text(yaml.safe_dump({"canary": {
        "project": "platform-system", "interval": f"{INTERVAL}s", "timeout": f"{TIMEOUT}s",
        "tiers": ["reserved"], "clusters": probed(fleet_specs)}}))
    return SpecRepo(tmp_path / "repo", specs=specs, clusters=Path(fleet.clusters_path))


@pytest.fixture
def sre_token(kube: Callable[[str], Any]) -> str:
    """A token whose user may run ``verify`` (contrib/api/rbac-platform.yaml)."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    host = kube("host")
    core, rbac = client.CoreV1Api(host), client.RbacAuthorizationV1Api(host)
    for role in yaml.safe_load_all((REPO_ROOT / "contrib/api/rbac-platform.yaml").read_text()):
        with contextlib.suppress(ApiException):  # a second run on the same fleet
            rbac.create_cluster_role(role)
    with contextlib.suppress(ApiException):
        core.create_namespaced_service_account("default", {"metadata": {"name": SRE}})
        rbac.create_cluster_role_binding({
            "metadata": {"name": SRE},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "pincompute-verifier"},
            "subjects": [{"kind": "ServiceAccount", "name": SRE, "namespace": "default"}]})
    return str(core.create_namespaced_service_account_token(
        SRE, "default", {"spec": {"expirationSeconds": 3600}}).status.token)


@pytest.fixture
def serve(fleet: Any, canary_repo: SpecRepo, tmp_path: Path) -> Iterator[ServeProcess]:
    process = ServeProcess(canary_repo.bare, tmp_path / "serve.jsonl", "--kubeconfig",
                           str(fleet.kubeconfig), "--no-leader-election", "--no-events",
                           "--canary", real=True)
    try:
        yield process
    finally:
        process.stop()


def probes(base: str) -> dict[tuple[str, str], float]:
    """``pincompile_canary_probes_total`` by (cluster, result), from /metrics."""
    status, body = http("GET", f"{base}/metrics")
    assert status == 200, body
    found: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            if sample.name == "pincompile_canary_probes_total":
                found[(sample.labels["cluster"], sample.labels["result"])] = sample.value
    return found


def launch_failures(base: str) -> dict[str, float]:
    """Failed canary launches by cluster, from /metrics."""
    _, body = http("GET", f"{base}/metrics")
    return {s.labels["cluster"]: s.value
            for family in text_string_to_metric_families(body.decode())
            for s in family.samples
            if s.name == "pincompile_launch_failures_total" and s.labels["source"] == "canary"}


def verify(base: str, token: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pincompile.cli", "verify", "--server", base,
                           "--token", token], capture_output=True, text=True, timeout=300,
                          cwd=REPO_ROOT, check=False)


def more(base: str, before: dict[tuple[str, str], float], key: tuple[str, str]) -> bool:
    return probes(base).get(key, 0) > before.get(key, 0)


def test_a_stopped_scheduler_fails_that_clusters_probes_only(
        fleet: Any, fleet_specs: dict[str, ClusterSpec], serve: ServeProcess,
        sre_token: str) -> None:
    broken, healthy = probed(fleet_specs)
    base = serve.base
    wait_for(lambda: all(probes(base).get((c, "passed")) for c in (broken, healthy)),
             240, "a passed probe in both clusters",
             describe=lambda: f"{probes(base)}\n{serve.log.read_text()[-3000:]}")
    passing = verify(base, sre_token)
    assert passing.returncode == 0, passing.stdout + passing.stderr
    assert broken in passing.stdout and healthy in passing.stdout

    control.stop_component(fleet, broken, "kube-scheduler")
    try:
        stopped = time.monotonic()
        before = probes(base)
        wait_for(lambda: more(base, before, (broken, "launch")), INTERVAL + TIMEOUT + 15,
                 f"{broken}'s probe to fail", describe=lambda: str(probes(base)))
        assert time.monotonic() - stopped <= INTERVAL + TIMEOUT + 15
        wait_for(lambda: more(base, before, (healthy, "passed")), INTERVAL + TIMEOUT,
                 f"{healthy}'s probe to pass meanwhile")
        failures = launch_failures(base)
        assert failures.get(broken, 0) >= 1 and failures.get(healthy, 0) == 0, failures

        failing = verify(base, sre_token)
        assert failing.returncode == 1, failing.stdout + failing.stderr
        assert f"{broken}/reserved failed at launch" in failing.stderr, failing.stderr
        assert healthy not in failing.stderr
        assert "not scheduled" in failing.stderr
    finally:
        control.start_component(fleet, broken, "kube-scheduler")
    after = probes(base)
    wait_for(lambda: more(base, after, (broken, "passed")), 2 * INTERVAL + TIMEOUT,
             f"{broken}'s probes to pass again", describe=lambda: str(probes(base)))
    assert launch_failures(base).get(healthy, 0) == 0
