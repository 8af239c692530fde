"""Exec and logs on the local fleet are no way into the machine: ``kubectl exec`` runs as
an unprivileged user in the pod's own scratch directory and cannot read the fleet's
files, its processes end with the session, each pod's log is its own, and etcd answers
no one without the fleet's certificate. Through the real API servers and kwok: what only
the running fleet shows."""

from __future__ import annotations

import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from reconciler.fleet import debugging
from reconciler.fleet import fleet as fleet_mod
from reconciler.fleet.clusters import ClusterSpec
from reconciler.fleet.processes import running
from tests.e2e.support import general_cluster
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e

#: two pods of two projects (namespaces), as two tenants would have them
PODS = (("exec-e2e-a", "web-0"), ("exec-e2e-b", "web-0"))
Kube = Callable[[str], Any]


@pytest.fixture(scope="module")
def cluster(fleet_specs: dict[str, ClusterSpec]) -> ClusterSpec:
    return general_cluster(fleet_specs)


@pytest.fixture(scope="module")
def core(cluster: ClusterSpec, kube: Kube) -> Iterator[Any]:
    """The cluster's core API, with the two Running pods."""
    from kubernetes import client

    core: Any = client.CoreV1Api(kube(cluster.context))
    for namespace, pod in PODS:
        core.create_namespace({"metadata": {"name": namespace}})
        core.create_namespaced_pod(namespace, {"metadata": {"name": pod}, "spec": {
            "containers": [{"name": "main", "image": "registry.internal/e2e/app:1.0"}]}})
    try:
        for namespace, pod in PODS:
            wait_for(lambda n=namespace, p=pod: (
                core.read_namespaced_pod(p, n).status.phase == "Running"), 60,
                f"{namespace}/{pod} to run")
        yield core
    finally:
        for namespace, _ in PODS:
            core.delete_namespace(namespace)


def run(core: Any, where: tuple[str, str], *command: str) -> str:
    """What ``kubectl exec`` of ``command`` in a pod prints (stdout and stderr)."""
    from kubernetes.stream import stream

    namespace, pod = where
    return str(stream(core.connect_get_namespaced_pod_exec, pod, namespace,
                      command=list(command), stderr=True, stdin=False, stdout=True,
                      tty=False))


def test_exec_runs_as_an_unprivileged_user_in_the_pods_own_directory(
        fleet: fleet_mod.FleetState, cluster: ClusterSpec, core: Any) -> None:
    uid, gid, groups = run(core, PODS[0], "sh", "-c", "id -u; id -g; id -G").split("\n")[:3]
    assert uid != "0" and gid != "0" and "0" not in groups.split(), (uid, gid, groups)
    user = debugging.exec_user()
    if user is not None:  # the fleet runs as root
        assert (int(uid), int(gid)) == (user.uid, user.gid)
    where = [run(core, pod, "sh", "-c", 'echo "$PWD $HOME"').split() for pod in PODS]
    own = [debugging.scratch_dir(Path(fleet.exec_dir), user, cluster.name, *pod)
           for pod in PODS]
    assert where == [[str(own[0])] * 2, [str(own[1])] * 2] and own[0] != own[1]
    assert not own[0].is_relative_to(fleet.dir)


def test_exec_cannot_read_the_fleets_kubeconfig_certificates_or_data(
        fleet: fleet_mod.FleetState, core: Any) -> None:
    pki = fleet.dir / "pki"
    secrets = [fleet.kubeconfig, pki / "ca.key", pki / "admin.key", pki / "etcd.key"]
    assert all(path.exists() for path in secrets)
    # every refusal on stdout (2>&1), in order: no stderr chunk lands inside env's lines
    out = run(core, PODS[0], "sh", "-c", "; ".join(
        [f"cat {path} 2>&1" for path in secrets] + [f"ls {fleet.dir} {fleet.dir / 'etcd'} 2>&1",
                                                    "env"]))
    assert "PRIVATE KEY" not in out and "client-key" not in out, out
    assert out.count("Permission denied") == len(secrets) + 2, out
    # kwok's environment, which exec'd commands inherit, holds nothing of the user's
    names = {line.split("=", 1)[0] for line in out.splitlines() if "=" in line}
    assert names <= {"PATH", "HOME", "HOSTNAME", "PWD", "OLDPWD", "NO_PROXY", "no_proxy",
                     "LC_CTYPE", "PINCOMPILE_EXEC_SESSION", "SHLVL", "_"}, names


def test_etcd_answers_no_one_without_the_fleets_certificate(
        fleet: fleet_mod.FleetState) -> None:
    url = f"https://127.0.0.1:{fleet.etcd_port}/v2/keys"
    anonymous = ssl.create_default_context(cafile=str(fleet.dir / "pki" / "ca.crt"))
    with pytest.raises((ssl.SSLError, ConnectionError, urllib.error.URLError)):
        urllib.request.urlopen(url, context=anonymous, timeout=10)
    with pytest.raises((ConnectionError, urllib.error.URLError)):
        urllib.request.urlopen(url.replace("https", "http"), timeout=10)


def test_each_pods_log_is_its_own_and_exec_cannot_write_it(
        fleet: fleet_mod.FleetState, cluster: ClusterSpec, core: Any) -> None:
    logs = [debugging.log_file(fleet.dir, cluster.name, *pod, "main") for pod in PODS]
    wait_for(lambda: all(path.exists() for path in logs), 30, "the pods' logs")
    with open(logs[0], "a") as out:  # a line of the first pod's own output
        out.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S.000000000Z', time.gmtime())} "
                  "stdout F only in the first pod\n")

    def log(pod: tuple[str, str]) -> str:
        return str(core.read_namespaced_pod_log(pod[1], pod[0]))

    wait_for(lambda: "only in the first pod" in log(PODS[0]), 10,
             "the first pod's line in its log")
    wait_for(lambda: "pincompile fleet: pod log line" in log(PODS[1]), 10,
             "the second pod's own lines")
    assert "only in the first pod" not in log(PODS[1])
    tried = run(core, PODS[1], "sh", "-c", f"echo forged >> {logs[0]}; echo forged >> "
                                           f"{logs[1]}")
    assert tried.count("Permission denied") == 2, tried
    assert "forged" not in log(PODS[0]) + log(PODS[1])


def test_an_exec_sessions_processes_end_with_it(core: Any) -> None:
    """When a terminal closes (the client goes away), its shell and what it started in
    the background end; when a command ends, what it left behind (a daemon of its own
    session) ends too."""
    from kubernetes.stream import stream

    namespace, pod = PODS[0]
    terminal = stream(core.connect_get_namespaced_pod_exec, pod, namespace, command=[
        "sh", "-c", "sleep 600 & echo pids $$ $!; sleep 600"], stderr=False, stdin=True,
        stdout=True, tty=True, _preload_content=False)
    line = wait_for(lambda: next((
        text for text in [terminal.readline_stdout(timeout=1) or ""] if "pids" in text),
        None), 20, "the session's pids")
    pids = [int(pid) for pid in line.split()[1:]]
    assert len(pids) == 2 and all(running(pid) for pid in pids)
    terminal.close()  # the client goes away, mid-command
    wait_for(lambda: not any(running(p) for p in pids), 20,
             "the session's processes to end")

    left = run(core, PODS[0], "sh", "-c",
               "setsid sh -c 'sleep 600' </dev/null >/dev/null 2>&1 & echo $!")
    daemon = int(left.strip())
    wait_for(lambda: not running(daemon), 20,
             "what the ended command left behind to end")
