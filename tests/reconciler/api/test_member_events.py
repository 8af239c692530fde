"""Which member Events are kept and which app each one is of: a pod's and its owner's by
the pods' labels, any other object's (Deployment, HPA, Job) by a bounded lookup, each
remembered while an Event names it. The lookup's GET against a real cluster, and the
records in the store, are in tests/reconciler/serve/test_serve_e2e.py."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

import pytest

from pincompile.manifest import LABEL_APP, LABEL_KIND, LABEL_PROJECT
from reconciler.api.member_events import KEPT_KINDS, ObjectApps, lean_event
from reconciler.clients.connect import ClusterUnreachable
from reconciler.model import AppKey
from reconciler.store.collect import member_event_of

WEB: AppKey = ("PinApp", "shop", "web")
BATCH: AppKey = ("PinJob", "shop", "nightly")
LABELS = {LABEL_KIND: "PinApp", LABEL_PROJECT: "shop", LABEL_APP: "web"}


def event(kind: str, name: str, reason: str = "Reason", uid: str = "") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"uid": uid or f"{kind}-{name}-{reason}", "namespace": "shop",
                         "name": f"{name}.1", "managedFields": [{"manager": "kcm"}]},
            "involvedObject": {"apiVersion": "apps/v1", "kind": kind, "namespace": "shop",
                               "name": name, "uid": f"uid-{name}"},
            "reason": reason, "message": f"{reason} of {name}", "type": "Normal",
            "count": 1, "firstTimestamp": "2026-11-01T10:00:00Z",
            "lastTimestamp": "2026-11-01T10:00:00Z",
            "source": {"component": "deployment-controller"}}


POD = {"metadata": {"namespace": "shop", "name": "web-7d9-x2", "labels": LABELS,
                    "ownerReferences": [{"kind": "ReplicaSet", "name": "web-7d9"}]}}


class Lookups:
    """The app of each object by name, as a GET would find it; counts the GETs."""

    def __init__(self, apps: Mapping[str, AppKey | None], failing: int = 0) -> None:
        self.apps, self.failing = apps, failing
        self.asked: list[str] = []

    def __call__(self, involved: Mapping[str, Any]) -> AppKey | None:
        self.asked.append(f"{involved['kind']}/{involved['name']}")
        if len(self.asked) <= self.failing:
            raise ClusterUnreachable("rt-a: connection refused")
        return self.apps.get(str(involved["name"]))


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(max_workers=2) as executor:
        yield executor


def settled(apps: ObjectApps, pods: list[Any], events: Sequence[Any]
            ) -> list[tuple[Any, AppKey]]:
    """What ``apps`` finds once the lookups it started are done (as the next round of
    the collector would)."""
    apps.of(pods, events)
    wait(list(apps.pending.values()))
    return apps.of(pods, events)


def test_an_event_is_kept_lean_and_only_for_a_kind_an_app_is_made_of() -> None:
    scaled = event("Deployment", "web", "ScalingReplicaSet")
    lean = lean_event(scaled)
    assert lean is not None and "managedFields" not in lean["metadata"]
    assert "source" not in lean and lean["involvedObject"] == scaled["involvedObject"]
    assert member_event_of("rt-a", lean, WEB) == member_event_of("rt-a", scaled, WEB)
    assert {"Deployment", "ReplicaSet", "HorizontalPodAutoscaler", "Job", "CronJob",
            "DaemonSet", "Pod"} <= KEPT_KINDS
    for other in ("Node", "Lease", "Endpoints", "Namespace"):
        assert lean_event(event(other, "x")) is None, other


def test_a_pod_and_the_replicaset_that_made_it_find_their_app_by_the_pods_labels(
        pool: ThreadPoolExecutor) -> None:
    lookups = Lookups({})
    apps = ObjectApps(lookups, pool, qps=1.0, burst=5)
    created = event("ReplicaSet", "web-7d9", "SuccessfulCreate")
    scheduled = event("Pod", "web-7d9-x2", "Scheduled")
    stranger = event("Pod", "tool", "Scheduled")  # a pod with no app's labels
    assert apps.of([POD], [created, scheduled, stranger]) == [(created, WEB), (scheduled, WEB)]
    assert lookups.asked == []  # nothing read: the pod watch knew them
    # the pod and its ReplicaSet deleted: their Events, until their TTL, keep the app
    assert apps.of([], [created, scheduled]) == [(created, WEB), (scheduled, WEB)]
    assert lookups.asked == []
    assert apps.of([], []) == [] and apps.known == {}


def test_a_deployment_hpa_or_job_is_looked_up_once_while_its_events_last(
        pool: ThreadPoolExecutor) -> None:
    lookups = Lookups({"web": WEB, "nightly-1": BATCH, "coredns": None})
    apps = ObjectApps(lookups, pool, qps=1.0, burst=10)
    scaled = event("Deployment", "web", "ScalingReplicaSet")
    rescaled = event("HorizontalPodAutoscaler", "web", "SuccessfulRescale")
    completed = event("Job", "nightly-1", "Completed")
    system = event("Deployment", "coredns", "ScalingReplicaSet")
    events = [scaled, rescaled, completed, system]
    found = [(scaled, WEB), (rescaled, WEB), (completed, BATCH)]
    assert apps.of([], events) == []  # read in the pool: the caller does not wait
    wait(list(apps.pending.values()))
    assert apps.of([], events) == found
    assert sorted(lookups.asked) == ["Deployment/coredns", "Deployment/web",
                                     "HorizontalPodAutoscaler/web", "Job/nightly-1"]
    assert apps.of([], events) == found and len(lookups.asked) == 4  # remembered
    again = event("Deployment", "web", "ScalingReplicaSet", uid="later")
    assert apps.of([], [again]) == [(again, WEB)] and len(lookups.asked) == 4
    assert apps.of([], []) == [] and apps.known == {}


def test_lookups_are_rate_bounded_and_a_failed_one_is_asked_again(
        pool: ThreadPoolExecutor) -> None:
    many = [event("Deployment", f"app-{i}") for i in range(50)]
    lookups = Lookups({f"app-{i}": ("PinApp", "shop", f"app-{i}") for i in range(50)})
    apps = ObjectApps(lookups, pool, qps=0.001, burst=5)
    assert len(settled(apps, [], many)) == 5 and len(lookups.asked) == 5
    assert len(settled(apps, [], many)) == 5 and len(lookups.asked) == 5  # no token left

    failing = Lookups({"web": WEB}, failing=1)  # the first read fails, the next answers
    apps = ObjectApps(failing, pool, qps=1000.0, burst=5)
    scaled = event("Deployment", "web", "ScalingReplicaSet")
    assert settled(apps, [], [scaled]) == [] and apps.known == {}
    assert settled(apps, [], [scaled]) == [(scaled, WEB)]
    assert failing.asked == ["Deployment/web"] * 2
