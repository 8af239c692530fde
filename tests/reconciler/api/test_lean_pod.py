"""What the member pods' cache keeps of a pod (:func:`reconciler.api.pods.lean_pod`): a
pod as the API server sends it (managed fields, a sidecar crash-looping after an OOM
kill, an init container, annotations, a pending deletion) reads the same, whole or lean,
in everything that reads the cache: the pods route, the app of it and of its owner, and
the containers logs and exec pick."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from bench import member_caches
from reconciler.api.exec_protocol import ExecQuery, NoRunningPod, NotFound, pick_target
from reconciler.api.logs import LogQuery, log_targets
from reconciler.api.member_events import pods_objects
from reconciler.api.models import PodList
from reconciler.api.pods import lean_pod, pod_summary
from reconciler.status.document import app_of

APP = ("PinApp", "shop", "web")


def full_pod(index: int, phase: str = "Running") -> dict[str, Any]:
    """One of the app's pods, with a crash-looping sidecar, as the API server sends it."""
    pod = member_caches.pod(APP, "rt-a", index)
    spec, status = pod["spec"], pod["status"]
    sidecar = {**copy.deepcopy(spec["containers"][0]), "name": "proxy", "image": "envoy:1.31"}
    spec["containers"].append(sidecar)
    spec["initContainers"] = [{**copy.deepcopy(spec["containers"][0]), "name": "migrate"}]
    status["phase"] = phase
    status["containerStatuses"].append({
        "name": "proxy", "image": "docker.io/envoyproxy/envoy:1.31", "ready": False,
        "restartCount": 7, "started": False, "imageID": "sha256:ab12",
        "state": {"waiting": {"reason": "CrashLoopBackOff",
                              "message": "back-off 5m0s restarting failed container"}},
        "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137,
                                     "startedAt": "2026-11-26T09:10:00Z",
                                     "finishedAt": "2026-11-26T09:11:00Z",
                                     "containerID": "containerd://9f3e"}}})
    status["initContainerStatuses"] = [{
        "name": "migrate", "ready": True, "restartCount": 0, "image": "web:1",
        "state": {"terminated": {"reason": "Completed", "exitCode": 0}}}]
    pod["metadata"]["annotations"] = {"kubectl.kubernetes.io/restartedAt":
                                      "2026-11-26T09:00:00Z"}
    pod["metadata"]["deletionTimestamp"] = "2026-11-26T10:00:00Z"
    return pod


PODS = [full_pod(0), full_pod(1), full_pod(2, phase="Pending")]


def summaries(pods: list[dict[str, Any]]) -> PodList:
    return PodList(items=[pod_summary("rt-a", p) for p in pods])


def test_a_lean_pod_reads_as_the_whole_pod_in_the_pods_route() -> None:
    lean = [lean_pod(p) for p in PODS]
    assert summaries(lean) == summaries(PODS)
    proxy = summaries(lean).items[0].containers[1]
    assert (proxy.state, proxy.reason, proxy.restarts, proxy.lastTerminationReason,
            proxy.lastTerminationExitCode) == ("Waiting", "CrashLoopBackOff", 7,
                                               "OOMKilled", 137)


def test_a_lean_pod_finds_its_app_and_its_owners_app() -> None:
    lean = [lean_pod(p) for p in PODS]
    assert [app_of(p) for p in lean] == [app_of(p) for p in PODS] == [APP] * 3
    assert pods_objects(lean) == pods_objects(PODS)
    assert ("ReplicaSet", "shop", "web-5d8f6b9c7") in pods_objects(lean)


@pytest.mark.parametrize("query", [LogQuery(), LogQuery(container="proxy"),
                                   LogQuery(pod=PODS[1]["metadata"]["name"])])
def test_logs_pick_the_same_containers_from_a_lean_pod(query: LogQuery) -> None:
    lean = summaries([lean_pod(p) for p in PODS])
    assert log_targets(lean, query, limit=10) == log_targets(summaries(PODS), query, limit=10)
    assert log_targets(lean, query, limit=10)


@pytest.mark.parametrize("query", [ExecQuery(("sh",)), ExecQuery(("sh",), container="proxy"),
                                   ExecQuery(("sh",), pod=PODS[1]["metadata"]["name"])])
def test_exec_picks_the_same_container_from_a_lean_pod(query: ExecQuery) -> None:
    lean = summaries([lean_pod(p) for p in PODS])
    assert pick_target(lean, query) == pick_target(summaries(PODS), query)


@pytest.mark.parametrize("query", [ExecQuery(("sh",), container="nope"),
                                   ExecQuery(("sh",), pod=PODS[2]["metadata"]["name"])])
def test_exec_refuses_the_same_way_from_a_lean_pod(query: ExecQuery) -> None:
    lean = summaries([lean_pod(p) for p in PODS])
    with pytest.raises((NotFound, NoRunningPod)) as whole:
        pick_target(summaries(PODS), query)
    with pytest.raises(type(whole.value), match=re.escape(str(whole.value))):
        pick_target(lean, query)


def test_a_lean_pod_is_a_small_part_of_the_whole_and_keeps_no_managed_fields() -> None:
    lean = lean_pod(PODS[0])
    assert "managedFields" not in lean["metadata"]
    assert (lean["kind"], lean["metadata"]["resourceVersion"]) == \
        ("Pod", PODS[0]["metadata"]["resourceVersion"])
    # about 1/9 now; the whole spec or status kept again would pass a quarter
    assert len(json.dumps(lean)) < len(json.dumps(PODS[0])) / 6


def test_a_pod_with_nothing_reported_yet_is_kept_as_such() -> None:
    bare = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-1", "namespace": "shop"}}
    assert pod_summary("rt-a", lean_pod(bare)) == pod_summary("rt-a", bare)
