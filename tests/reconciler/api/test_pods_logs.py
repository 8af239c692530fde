"""An app's pods as the API shows them (the pod object distilled, managed fields gone),
which containers a log request picks, and how pods and logs are refused: 403 per verb
(logs need their own), 404, 503 without member clusters. Real pods and log streams from
the fleet are in test_access_e2e.py."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from fastapi.testclient import TestClient

from pincompile.manifest import LABEL_APP, LABEL_KIND, LABEL_PROJECT
from reconciler.api.access import RateLimits
from reconciler.api.app import Gateway, create_app
from reconciler.api.logs import LogQuery, StreamSlots, TooMany, log_targets
from reconciler.api.models import PodList
from reconciler.api.pods import MemberPods, pod_summary
from reconciler.store import Store
from tests.reconciler.api.test_app import APPS, Statuses, TablePolicy

CRASHING = {
    "metadata": {"name": "web-7d4-x2", "namespace": "shop",
                 "creationTimestamp": "2026-11-01T00:00:00Z",
                 "managedFields": [{"manager": "kube-controller-manager"}]},
    "spec": {"nodeName": "node-1", "containers": [{"name": "main", "image": "web:1"},
                                                  {"name": "proxy", "image": "envoy:1"}]},
    "status": {"phase": "Running", "containerStatuses": [
        {"name": "main", "image": "web:1", "ready": False, "restartCount": 4,
         "state": {"waiting": {"reason": "CrashLoopBackOff"}},
         "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}},
        {"name": "proxy", "image": "envoy:1", "ready": True, "restartCount": 0,
         "state": {"running": {"startedAt": "2026-11-01T00:00:05Z"}}}]},
}


def test_a_pod_says_where_it_runs_and_why_a_container_last_ended() -> None:
    pod = pod_summary("east", CRASHING)
    assert (pod.cluster, pod.node, pod.phase, pod.ready, pod.restarts) == \
        ("east", "node-1", "Running", "1/2", 4)
    main, proxy = pod.containers
    assert (main.state, main.reason, main.lastTerminationReason,
            main.lastTerminationExitCode) == ("Waiting", "CrashLoopBackOff", "OOMKilled", 137)
    assert (proxy.state, proxy.ready, proxy.lastTerminationReason) == ("Running", True, "")
    assert "managedFields" not in pod.model_dump_json()


def test_a_pod_not_started_yet_lists_its_containers_as_unknown() -> None:
    pod = pod_summary("east", {**CRASHING, "status": {"phase": "Pending"}})
    assert pod.ready == "0/2" and [c.state for c in pod.containers] == ["Unknown", "Unknown"]


PODS = PodList(items=[pod_summary(cluster, {**CRASHING, "metadata": {
    **CRASHING["metadata"], "name": f"web-{cluster}"}}) for cluster in ("east", "west")])


def test_a_log_request_picks_containers_by_cluster_pod_and_name() -> None:
    every = log_targets(PODS, LogQuery(), limit=10)
    assert [t.prefix for t in every] == ["east/web-east/main", "east/web-east/proxy",
                                         "west/web-west/main", "west/web-west/proxy"]
    assert [t.prefix for t in log_targets(PODS, LogQuery(container="main", cluster="west"),
                                          limit=10)] == ["west/web-west/main"]
    assert log_targets(PODS, LogQuery(pod="nope"), limit=10) == []
    with pytest.raises(TooMany, match="4 containers match, at most 3"):
        log_targets(PODS, LogQuery(), limit=3)


def test_stream_slots_are_counted_per_user() -> None:
    slots = StreamSlots(per_user=2)
    assert slots.take("a") and slots.take("a") and not slots.take("a") and slots.take("b")
    slots.give_back("a")
    assert slots.open("a") == 1 and slots.take("a")


@pytest.fixture
def client(tmp_path: Path) -> Any:
    store = Store.open(f"sqlite:///{tmp_path / 'insight.db'}")
    reads = {("alice", "read", "PinApp", "shop")}
    policy = TablePolicy({"alice-token": "alice", "bob-token": "bob"},
                         reads | {("bob", "read", "PinApp", "shop"),
                                  ("bob", "logs", "PinApp", "shop")})
    gateway = Gateway(apps=Statuses(APPS), store=store, access=policy,
                      limits=RateLimits(qps=1000, burst=1000))
    yield TestClient(create_app(gateway))
    store.close()


def call(client: TestClient, path: str, token: str) -> Any:
    return client.get(f"/api/v1/apps/PinApp/shop/{path}",
                      headers={"Authorization": f"Bearer {token}"})


def test_logs_need_the_logs_verb_and_pods_the_read_verb(client: TestClient) -> None:
    assert call(client, "web-00/logs", "alice-token").status_code == 403
    assert call(client, "web-00/pods", "alice-token").status_code == 503  # no members
    assert call(client, "web-00/logs", "bob-token").status_code == 503
    assert call(client, "nope/pods", "alice-token").status_code == 404
    refused = client.get("/api/v1/apps/PinApp/ads/secret/pods",
                         headers={"Authorization": "Bearer alice-token"})
    assert refused.status_code == 403
    assert call(client, "web-00/logs?tailLines=-1", "bob-token").status_code == 422


def test_a_pod_event_finds_its_app_by_the_pods_labels_even_after_the_pod_is_gone() -> None:
    pods = MemberPods(None, lambda: {})
    web = {"metadata": {"namespace": "shop", "name": "web-1", "labels": {
        LABEL_KIND: "PinApp", LABEL_PROJECT: "shop", LABEL_APP: "web"}}}
    other = {"metadata": {"namespace": "shop", "name": "tool", "labels": {}}}

    def event(pod: str) -> dict[str, Any]:
        return {"metadata": {"uid": pod},
                "involvedObject": {"kind": "Pod", "namespace": "shop", "name": pod}}

    watched = SimpleNamespace(lock=threading.Lock(), objects={1: web, 2: other}, conn=None)
    events = SimpleNamespace(lock=threading.Lock(),
                             objects={1: event("web-1"), 2: event("tool"), 3: event("gone")})
    pods._watches, pods._events = {"west": watched}, {"west": events}  # type: ignore[dict-item]
    assert pods.app_events() == [("west", event("web-1"), ("PinApp", "shop", "web"))]
    watched.objects = {}  # web-1 deleted: its Events stay until their TTL, and keep its app
    assert [e[2] for e in pods.app_events()] == [("PinApp", "shop", "web")]
    events.objects = {}
    assert pods.app_events() == [] and pods._object_apps["west"].known == {}
