"""Leader election, shards, relayed pushes and audit Events on the fleet's host cluster.

``serve`` runs as real child processes with the recording fake runner (the reconciler
engine is not needed to decide *who* reconciles); the Leases and Events are real objects
in the host cluster's API server.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from reconciler.serve.webhooks import GENERIC_SIGNATURE_HEADER, sign
from tests.support.serve import (
    BAD_SPEC,
    EXAMPLES,
    ServeProcess,
    SpecRepo,
    http,
    serve_status,
)
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e
SECRET = "e2e-secret"
LEASE = ("--lease-duration", "8s", "--renew-deadline", "5s", "--retry-period", "1s")
DURATION = 8.0


@pytest.fixture
def host_ns(fleet: Any, kube: Any) -> Iterator[str]:
    from kubernetes import client

    core = client.CoreV1Api(kube("host"))
    name = f"serve-e2e-{uuid.uuid4().hex[:8]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    yield name
    core.delete_namespace(name)


@pytest.fixture
def fleet_repo(fleet: Any, tmp_path: Path) -> SpecRepo:
    """The platform specs (runtime, sidecars) with the fleet's own member clusters."""
    specs = tmp_path / "specs"
    shutil.copytree(EXAMPLES / "platform", specs / "platform",
                    ignore=shutil.ignore_patterns("clusters", "projects"))
    return SpecRepo(tmp_path / "repo", specs=specs, clusters=Path(fleet.clusters_path))


@pytest.fixture
def start(fleet: Any, host_ns: str, fleet_repo: SpecRepo, tmp_path: Path
          ) -> Iterator[Callable[..., ServeProcess]]:
    started: list[ServeProcess] = []

    def run(identity: str, *extra: str) -> ServeProcess:
        process = ServeProcess(
            fleet_repo.bare, tmp_path / f"{identity}.jsonl", "--kubeconfig",
            str(fleet.kubeconfig), "--namespace", host_ns, *LEASE, *extra,
            identity=identity, env={"PINCOMPILE_WEBHOOK_SECRET": SECRET})
        started.append(process)
        return process

    yield run
    for process in started:
        process.stop()


def lease(kube: Any, namespace: str, name: str = "pincompile-serve") -> Any:
    from kubernetes import client

    return client.CoordinationV1Api(kube("host")).read_namespaced_lease(name, namespace)


def push_hook(base: str, sha: str) -> int:
    body = json.dumps({"ref": "refs/heads/main", "after": sha}).encode()
    status, _ = http("POST", f"{base}/webhooks/generic", body,
                     {"Content-Type": "application/json",
                      GENERIC_SIGNATURE_HEADER: sign(SECRET.encode(), body)})
    return status


def status(process: ServeProcess) -> dict[str, Any]:
    return serve_status(process.base)


def test_one_of_two_replicas_reconciles_and_the_other_takes_over_after_sigkill(
        start: Callable[..., ServeProcess], fleet_repo: SpecRepo, host_ns: str,
        kube: Any) -> None:
    a = start("serve-a")
    wait_for(lambda: a.passes(), 120, "serve-a's first pass")
    b = start("serve-b")
    wait_for(lambda: status(b)["ready"], 120, "serve-b ready as a standby")
    time.sleep(3 * DURATION / 4)
    assert status(a)["leading"] == [0] and status(b)["leading"] == []
    assert lease(kube, host_ns).spec.holder_identity == "serve-a"
    assert b.passes() == [] and b.passes("start") == []

    # a push that reaches the standby is relayed through the Lease to the leader
    sha = fleet_repo.commit("relayed push")
    assert push_hook(b.base, sha) == 202
    wait_for(lambda: [p["revision"] for p in a.passes()][-1:] == [sha], 90,
             "the leader applies a push the standby received")
    assert b.passes("start") == []

    transitions = lease(kube, host_ns).spec.lease_transitions or 0
    os.kill(a.proc.pid, signal.SIGKILL)
    killed = time.monotonic()
    wait_for(lambda: lease(kube, host_ns).spec.holder_identity == "serve-b", DURATION + 20,
             "serve-b holds the Lease")
    took_over = time.monotonic() - killed
    wait_for(lambda: b.passes(), 120, "serve-b reconciles")
    applied = time.monotonic() - killed
    print(f"takeover after SIGKILL: Lease in {took_over:.1f}s, first pass done in "
          f"{applied:.1f}s (lease duration {DURATION:.0f}s)")
    assert took_over <= DURATION + 10, "a margin for the loaded test machine"
    assert took_over >= DURATION - 1.5, "taken over before the dead leader's Lease expired"
    assert b.passes()[0]["revision"] == sha
    assert (lease(kube, host_ns).spec.lease_transitions or 0) == transitions + 1


def test_sigterm_finishes_and_releases_the_lease_for_a_fast_handover(
        start: Callable[..., ServeProcess], host_ns: str, kube: Any) -> None:
    a = start("serve-a", "--lease-duration", "20s", "--renew-deadline", "15s")
    wait_for(lambda: a.passes(), 120, "serve-a's first pass")
    b = start("serve-b", "--lease-duration", "20s", "--renew-deadline", "15s")
    wait_for(lambda: status(b)["ready"], 120, "serve-b ready as a standby")
    stopped = time.monotonic()
    a.proc.send_signal(signal.SIGTERM)
    assert a.proc.wait(timeout=120) == 0
    exited = time.monotonic()
    # released, not left to expire: right after the exit the holder is empty (or already b)
    assert lease(kube, host_ns).spec.holder_identity in ("", None, "serve-b")
    wait_for(lambda: lease(kube, host_ns).spec.holder_identity == "serve-b", 90,
             "serve-b holds the released Lease")
    handover = time.monotonic() - exited
    print(f"handover after SIGTERM: {time.monotonic() - stopped:.1f}s from the signal, "
          f"{handover:.1f}s from the exit (lease duration 20s)")
    assert handover < 15, "the standby waited for the Lease to expire"
    assert "released pincompile-serve" in a.log.read_text()


def test_two_shards_reconcile_every_cluster_exactly_once(
        start: Callable[..., ServeProcess], fleet_repo: SpecRepo, fleet_specs: Any,
        host_ns: str, kube: Any) -> None:
    a = start("serve-a", "--shards", "2")
    b = start("serve-b", "--shards", "2")

    def spread() -> bool:
        leading = [status(a)["leading"], status(b)["leading"]]
        return sorted(leading[0] + leading[1]) == [0, 1] and all(len(x) == 1 for x in leading)

    # a replica that starts alone leads both shards and hands one over when the other joins
    wait_for(spread, 4 * DURATION + 60, "one shard led by each replica")
    sha = fleet_repo.commit("push for every shard")
    assert push_hook(a.base, sha) == 202  # b's shard hears of it through its Lease
    for process in (a, b):
        wait_for(lambda p=process: [x["revision"] for x in p.passes()][-1:] == [sha], 120,
                 f"{process.log.name} applies the push")
    covered_a = set(a.passes()[-1]["clusters"])
    covered_b = set(b.passes()[-1]["clusters"])
    assert covered_a | covered_b == set(fleet_specs), "a member cluster was not reconciled"
    assert not covered_a & covered_b, "a member cluster was reconciled twice"
    assert {lease(kube, host_ns, f"pincompile-serve-{i}-of-2").spec.holder_identity
            for i in range(2)} == {"serve-a", "serve-b"}


def test_each_pass_is_an_event_on_the_host_and_a_broken_push_a_warning(
        start: Callable[..., ServeProcess], fleet_repo: SpecRepo, host_ns: str,
        kube: Any) -> None:
    from kubernetes import client

    a = start("serve-a")
    wait_for(lambda: a.passes(), 120, "the first pass")
    bad = fleet_repo.commit("break a spec", files={"platform/broken.yaml": BAD_SPEC})
    assert push_hook(a.base, bad) == 202
    core = client.CoreV1Api(kube("host"))

    def events() -> list[Any]:
        return [e for e in core.list_namespaced_event(host_ns).items
                if e.reporting_component == "pincompile-serve"]

    found = wait_for(lambda: len(events()) >= 2 and events(), 120, "two audit Events")
    by_reason = {e.reason: e for e in found}
    applied, failed = by_reason["PassApplied"], by_reason["CompileFailed"]
    assert applied.type == "Normal" and failed.type == "Warning"
    assert (applied.involved_object.kind, applied.involved_object.name) == \
        ("Lease", "pincompile-serve")
    record = json.loads(applied.metadata.annotations["pincompute.io/audit"])
    assert record["revision"] == fleet_repo.first and record["author"] == "Ada Lovelace"
    assert record["subject"] == "initial specs" and set(record["clusters"])
    assert bad[:12] in failed.message and "platform/broken.yaml:5" in failed.message
    assert [p["revision"] for p in a.passes()] == [fleet_repo.first], "a broken push applied"
