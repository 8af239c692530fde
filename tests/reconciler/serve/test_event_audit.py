"""The audit Event of a pass, as ``serve --events`` creates it in the host cluster (on the
in-memory one of :mod:`tests.support.kube_fake`): about the serve Lease, the record in an
annotation, a warning for a failed pass; a refused create is logged, never raised."""

from __future__ import annotations

import json

from reconciler.kinds import KindInfo
from reconciler.serve.audit import EVENT_ANNOTATION, AuditRecord, EventAudit
from tests.support.kube_fake import FakeAccess, FakeCluster

EVENT = KindInfo("v1", "Event")


def record(outcome: str) -> AuditRecord:
    return AuditRecord(time="2026-12-02T05:00:00Z", revision="a" * 40, author="ana",
                       subject="bump", trigger="push", outcome=outcome,
                       duration_seconds=1.5, error="boom" if outcome == "failed" else None)


def test_each_record_is_an_event_about_the_lease_and_a_refused_one_is_only_logged() -> None:
    host = FakeAccess("host", FakeCluster("host"))
    audit = EventAudit(host, "default", "pincompile-serve", "replica-1")
    audit.write(record("applied"))
    audit.write(record("failed"))
    events = host.list(EVENT, namespace="default")["items"]
    assert sorted((e["reason"], e["type"]) for e in events) == [
        ("PassApplied", "Normal"), ("PassFailed", "Warning")]
    for event in events:
        assert event["metadata"]["name"].startswith("pincompile-serve.")
        assert event["involvedObject"]["kind"] == "Lease"
        assert event["source"] == {"component": "pincompile-serve", "host": "replica-1"}
        kept = json.loads(event["metadata"]["annotations"][EVENT_ANNOTATION])
        assert kept["revision"] == "a" * 40
    EventAudit(host, "no-such-namespace", "pincompile-serve", "replica-1").write(
        record("applied"))  # a 404: logged
