"""An app's timeline without serve's store: pincompile's Events on the host and the
Kubernetes Events of the app's objects in its member clusters, read now; its revisions
from ``status.history``; and how they merge with the store's."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest
from fastapi.testclient import TestClient

from pincompile.manifest import LABEL_APP, LABEL_KIND, LABEL_PROJECT
from reconciler.api.access import RateLimits
from reconciler.api.app import Gateway, create_app
from reconciler.api.timeline import ClustersTimeline, app_events, merged, revisions
from reconciler.clients.connect import ClusterUnreachable, Connection
from reconciler.store import EventRecord, RevisionRecord, Store
from tests.support.api_fakes import Statuses, TablePolicy
from tests.support.fake_clusters import FakeCluster

APP = ("PinApp", "search", "search-api")
T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def labelled(kind: str, name: str, app: tuple[str, str, str] = APP, *,
             api_version: str = "v1", namespace: str = "search") -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {
        "name": name, "namespace": namespace, "labels": {
            LABEL_KIND: app[0], LABEL_PROJECT: app[1], LABEL_APP: app[2]}}}


def event(kind: str, name: str, reason: str, minute: int, *, api_version: str = "v1",
          namespace: str = "search", warning: bool = False) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{name}.{reason}", "namespace": namespace,
                         "uid": f"uid-{name}-{reason}"},
            "involvedObject": {"apiVersion": api_version, "kind": kind, "name": name,
                               "namespace": namespace},
            "reason": reason, "message": f"{reason} {name}", "count": 1,
            "type": "Warning" if warning else "Normal",
            "lastTimestamp": (T0 + timedelta(minutes=minute)).isoformat()}


HOST = FakeCluster("host", [
    {"apiVersion": "pincompute.io/v1", "kind": "Project",
     "metadata": {"name": "search"}, "spec": {"namespace": "search"}},
    event("PinApp", "search-api", "Applied", 0, api_version="pincompute.io/v1"),
    event("PinApp", "search-api-canary", "Applied", 1, api_version="pincompute.io/v1"),
])
CANARY = ("PinApp", "search", "search-api-canary")
SCALER = ("PinScaler", "search", "search-api")
MEMBER = FakeCluster("use1a", [
    labelled("Deployment", "search-api", api_version="apps/v1"),
    labelled("ReplicaSet", "search-api-7d9f", api_version="apps/v1"),
    labelled("Pod", "search-api-7d9f-abcde"),
    labelled("HorizontalPodAutoscaler", "search-api", SCALER, api_version="autoscaling/v2"),
    labelled("Deployment", "search-api-canary", CANARY, api_version="apps/v1"),
    event("Deployment", "search-api", "ScalingReplicaSet", 2, api_version="apps/v1"),
    event("ReplicaSet", "search-api-7d9f", "SuccessfulCreate", 3, api_version="apps/v1"),
    event("Pod", "search-api-7d9f-abcde", "Scheduled", 4),
    event("Pod", "search-api-55aa-zzzzz", "Killing", 5),  # gone with its ReplicaSet
    event("Pod", "search-api-canary-1b2c-qqqqq", "Killing", 6),  # the canary's, gone
    event("HorizontalPodAutoscaler", "search-api", "SuccessfulRescale", 7,
          api_version="autoscaling/v2"),
    event("Pod", "search-api-7d9f-abcde", "Unhealthy", 8, namespace="ads", warning=True),
    event("Pod", "payments-1-a", "Scheduled", 9),
])


def timeline(members: Mapping[str, FakeCluster | str]) -> ClustersTimeline:
    return ClustersTimeline(cast(Connection, HOST),
                            lambda names: {n: cast(Any, members.get(n, "no context"))
                                           for n in names})


def test_an_apps_events_are_its_objects_in_every_member_and_its_own_on_the_host() -> None:
    found = timeline({"use1a": MEMBER}).events(APP, ["use1a"],
                                                ["search-api", "search-api-canary"])
    assert [(r.cluster, r.reason, r.object) for r in found] == [
        ("", "Applied", ""),
        ("use1a", "ScalingReplicaSet", "Deployment/search/search-api"),
        ("use1a", "SuccessfulCreate", "ReplicaSet/search/search-api-7d9f"),
        ("use1a", "Scheduled", "Pod/search/search-api-7d9f-abcde"),
        ("use1a", "Killing", "Pod/search/search-api-55aa-zzzzz")]
    assert {r.source for r in found} == {"pincompile", "kubernetes"}
    scaler = timeline({"use1a": MEMBER}).events(SCALER, ["use1a"], ["search-api"])
    assert [r.reason for r in scaler] == ["SuccessfulRescale"]  # no pod is a scaler's


def test_a_member_that_cannot_be_read_is_a_warning_in_the_timeline_not_a_failure() -> None:
    class Down(FakeCluster):
        def list(self, *_args: Any, **_query: Any) -> Any:
            raise ClusterUnreachable("connection refused")

    found = timeline({"use1a": MEMBER, "usw2a": Down("usw2a", [])}).events(
        APP, ["use1a", "usw2a", "gone"], ["search-api"])
    warnings = [(r.cluster, r.reason, r.message) for r in found if r.warning]
    assert ("usw2a", "EventsUnreadable",
            "the Events in usw2a could not be read: connection refused") in warnings
    assert ("gone", "EventsUnreadable",
            "the Events in gone could not be read: no context") in warnings
    assert len([r for r in found if r.cluster == "use1a"]) == 4


def test_the_objects_of_an_app_with_a_longer_name_are_never_taken() -> None:
    events = [event("Pod", "search-api-canary-qqqqq", "Killing", 1),  # a daemon's pod
              event("Pod", "search-api-55aa-zzzzz", "Killing", 2)]
    owned = {("apps/v1", "Deployment"): ["search-api"]}
    mine = app_events(events, owned, "search-api", ["search-api-canary"])
    assert [e["involvedObject"]["name"] for e in mine] == ["search-api-55aa-zzzzz"]
    # alone in its project, the canary's gone pod would fit search-api's Deployment
    assert len(app_events(events, owned, "search-api", [])) == 2


def record(uid: str, minute: int, cluster: str = "", count: int = 1) -> EventRecord:
    return EventRecord(app=APP, reason="R", message=uid, uid=uid, cluster=cluster,
                       last_seen=T0 + timedelta(minutes=minute), count=count)


def test_the_store_and_the_clusters_merge_each_event_once_newest_kept() -> None:
    stored = [record("a", 1), record("b", 2, "use1a", count=1)]
    live = [record("b", 5, "use1a", count=3), record("c", 3, "use1a")]
    both = merged(stored, live, limit=10)
    assert [(r.uid, r.count) for r in both] == [("a", 1), ("c", 1), ("b", 3)]
    assert [r.uid for r in merged(stored, live, limit=2)] == ["c", "b"]


def test_revisions_come_from_the_status_history_and_the_store_each_once() -> None:
    sha = "a" * 40
    status = {"history": [
        {"revision": sha, "appliedAt": "2026-11-01T12:05:00Z", "result": "Healthy"},
        {"revision": "b" * 40 + "-dirty", "appliedAt": "2026-11-01T12:03:00Z",
         "result": "Degraded"},
        {"bogus": True}, "not an entry"]}
    stored = [RevisionRecord(app=APP, revision=sha, applied_at=T0 + timedelta(minutes=5),
                             result="Progressing", commit=sha, author="ana")]
    found = revisions(status, stored, APP, limit=10)
    assert [(r.revision[:4], r.author, r.commit[:4], r.result) for r in found] == [
        ("aaaa", "ana", "aaaa", "Progressing"), ("bbbb", "", "", "Degraded")]
    assert len(revisions(status, [], APP, limit=1)) == 1


@pytest.fixture
def gateway(tmp_path: Path) -> Gateway:
    statuses = {APP: {"phase": "Healthy", "clusters": [{"name": "use1a"}], "history": [
        {"revision": "c" * 40, "appliedAt": "2026-11-01T12:00:00Z", "result": "Healthy"}]}}
    store = Store.open(f"sqlite:///{tmp_path / 'insight.db'}")
    store.add_events([record("stale", 0)])  # a throwaway store's are never shown
    return Gateway(apps=Statuses(statuses), store=store,
                   access=TablePolicy({"t": "me"}, {("me", "read", "PinApp", "search")}),
                   limits=RateLimits(1000, 1000), timeline=timeline({"use1a": MEMBER}),
                   store_read=False)


def test_without_a_store_the_api_answers_events_and_history_from_the_clusters(
        gateway: Gateway) -> None:
    client = TestClient(create_app(gateway))
    auth = {"Authorization": "Bearer t"}
    events = client.get("/api/v1/apps/PinApp/search/search-api/events", headers=auth)
    assert events.status_code == 200
    assert [e["reason"] for e in events.json()] == [
        "Applied", "ScalingReplicaSet", "SuccessfulCreate", "Scheduled", "Killing"]
    history = client.get("/api/v1/apps/PinApp/search/search-api/history", headers=auth)
    assert [(r["revision"][:4], r["result"]) for r in history.json()] == [("cccc", "Healthy")]
    for tail in ("events", "history"):
        missing = client.get(f"/api/v1/apps/PinApp/search/nope/{tail}", headers=auth)
        assert missing.status_code == 404
