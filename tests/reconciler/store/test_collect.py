"""What the collector makes of the host's Events and app statuses, and what it writes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

from reconciler.model import AppKey
from reconciler.store.collect import (
    HostCollector,
    event_of,
    member_event_of,
    revision_of,
    samples_due,
    transition_of,
)
from reconciler.store.store import Store

APP = ("PinApp", "shop", "web")
SHA = "a" * 40


def test_an_event_on_an_app_resource_becomes_a_record_of_that_app() -> None:
    record = event_of({
        "metadata": {"uid": "u-1", "creationTimestamp": "2026-11-01T10:00:00Z"},
        "involvedObject": {"apiVersion": "pincompute.io/v1", "kind": "PinApp",
                           "namespace": "shop", "name": "web"},
        "reason": "RolloutHalted", "message": "zone b failed", "type": "Warning",
        "count": 3, "firstTimestamp": "2026-11-01T09:00:00Z",
        "lastTimestamp": "2026-11-01T10:00:00Z"})
    assert record is not None and record.app == APP and record.warning and record.count == 3
    assert record.last_seen == datetime(2026, 11, 1, 10, tzinfo=UTC)
    assert record.first_seen == datetime(2026, 11, 1, 9, tzinfo=UTC)


def test_an_event_without_an_object_uid_or_time_is_skipped() -> None:
    assert event_of({"metadata": {"uid": "u"}, "involvedObject": {"kind": "PinApp"}}) is None
    assert event_of({"metadata": {}, "involvedObject": {"kind": "PinApp", "name": "w"},
                     "lastTimestamp": "2026-11-01T10:00:00Z"}) is None
    assert event_of({"metadata": {"uid": "u"}, "lastTimestamp": "not a time",
                     "involvedObject": {"kind": "PinApp", "name": "w"}}) is None


def test_a_ready_transition_is_one_event_keyed_by_its_time() -> None:
    status = {"phase": "Degraded", "conditions": [{
        "type": "Ready", "status": "False", "reason": "Degraded", "message": "1/3 ready",
        "lastTransitionTime": "2026-11-01T10:00:00Z"}]}
    first, again = transition_of(APP, status), transition_of(APP, dict(status))
    assert first is not None and first == again  # two replicas write the same record
    assert (first.reason, first.warning, first.message) == ("BecameDegraded", True, "1/3 ready")
    assert transition_of(APP, {"phase": "Healthy"}) is None


def test_a_revision_names_its_commit_and_author_when_it_is_a_commit() -> None:
    status = {"phase": "Healthy", "lastAppliedRevision": SHA,
              "lastAppliedTime": "2026-11-01T10:00:00Z"}
    record = revision_of(APP, status, lambda commit: f"author of {commit[:4]}")
    assert record is not None and (record.commit, record.author, record.result) == (
        SHA, "author of aaaa", "Healthy")
    local = revision_of(APP, status | {"lastAppliedRevision": "dirty-tree"}, lambda c: "x")
    assert local is not None and (local.commit, local.author) == ("", "")
    assert revision_of(APP, {"phase": "Healthy"}, lambda c: "x") is None


def test_a_scalers_replicas_are_sampled_when_they_change_and_every_15_minutes() -> None:
    scaler, now = ("PinScaler", "shop", "web"), datetime(2026, 11, 1, 10, 0, 42, tzinfo=UTC)
    statuses = {scaler: {"replicas": 6, "readyReplicas": 4, "floor": 3},
                APP: {"replicas": 2, "readyReplicas": 2}}
    first = samples_due(statuses, {}, now)
    assert [(s.app, s.at, s.desired, s.ready, s.floor) for s in first] == [
        (scaler, datetime(2026, 11, 1, 10, 0, tzinfo=UTC), 6, 4, 3)]  # at the minute
    sampled = {scaler: first[0]}
    assert samples_due(statuses, sampled, now + timedelta(minutes=5)) == []  # unchanged
    assert len(samples_due(statuses, sampled, now + timedelta(minutes=15))) == 1
    changed = {scaler: {"replicas": 9, "readyReplicas": 4, "floor": 3}}
    assert samples_due(changed, sampled, now + timedelta(seconds=10)) == []  # same minute
    assert [s.desired for s in samples_due(changed, sampled, now + timedelta(minutes=1))] \
        == [9]
    hostile = {scaler: {"replicas": "many", "readyReplicas": -5}}
    assert [(s.desired, s.ready, s.floor) for s in samples_due(hostile, {}, now)] == [(0, 0, 0)]


def test_a_pods_event_in_a_member_is_a_kubernetes_record_of_its_app() -> None:
    """The scheduler writes events.k8s.io Events: no lastTimestamp, a series, a note."""
    record = member_event_of("west", {
        "metadata": {"uid": "e-1", "creationTimestamp": "2026-11-01T10:00:00Z"},
        "involvedObject": {"kind": "Pod", "namespace": "shop", "name": "web-7d9-x2"},
        "reason": "FailedScheduling", "note": "0/3 nodes are available", "type": "Warning",
        "eventTime": "2026-11-01T09:59:00.000000Z",
        "series": {"count": 4, "lastObservedTime": "2026-11-01T10:05:00.000000Z"}}, APP)
    assert record is not None and record.app == APP and record.cluster == "west"
    assert (record.source, record.object, record.count) == ("kubernetes", "Pod/shop/web-7d9-x2", 4)
    assert record.warning and record.message == "0/3 nodes are available"
    assert record.first_seen == datetime(2026, 11, 1, 9, 59, tzinfo=UTC)
    assert record.last_seen == datetime(2026, 11, 1, 10, 5, tzinfo=UTC)
    assert member_event_of("west", {"metadata": {}, "reason": "x"}, APP) is None


def test_a_deployments_scaling_in_a_member_is_a_kubernetes_record_naming_the_deployment(
        ) -> None:
    record = member_event_of("rt-a", {
        "metadata": {"uid": "e-2", "creationTimestamp": "2026-11-01T10:00:00Z"},
        "involvedObject": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "shop",
                           "name": "web"},
        "reason": "ScalingReplicaSet", "type": "Normal",
        "message": "Scaled up replica set web-7d9 from 2 to 3",
        "firstTimestamp": "2026-11-01T10:00:00Z", "lastTimestamp": "2026-11-01T10:00:00Z"},
        APP)
    assert record is not None and (record.app, record.cluster, record.object) == (
        APP, "rt-a", "Deployment/shop/web")
    assert (record.reason, record.warning, record.count) == ("ScalingReplicaSet", False, 1)
    assert record.message == "Scaled up replica set web-7d9 from 2 to 3"


def test_a_revision_a_pass_published_is_kept_though_the_next_replaced_it_within_a_round(
        tmp_path: Path) -> None:
    """The collector reads statuses every 2 s; a pass hands over what it published, so a
    revision replaced before the next round is in the history all the same, once."""
    store = Store.open(f"sqlite:///{tmp_path / 'insight.db'}")
    watched: dict[AppKey, dict[str, object]] = {}
    collector = HostCollector(SimpleNamespace(name="host"), store,  # type: ignore[arg-type]
                              lambda: watched)

    def status(sha: str, minute: int) -> dict[str, object]:
        return {"phase": "Progressing", "lastAppliedRevision": sha,
                "lastAppliedTime": f"2026-11-01T10:{minute:02d}:00Z"}

    shas = [c * 40 for c in "abc"]
    for minute, sha in enumerate(shas):
        assert collector.record_pass({APP: status(sha, minute)}, push=f"d-{minute}") == 1
    assert collector.record_pass({APP: status(shas[-1], 2)}) == 0  # seen: not written again
    assert collector.record_pass({APP: status(shas[-1], 3)}) == 0  # its next zone: no row
    watched[APP] = status(shas[0], 0)  # the watch still shows the first one
    collector.collect()
    assert [(r.commit, r.push) for r in store.history(APP)] == [
        (sha, f"d-{minute}") for minute, sha in enumerate(shas)][::-1]
