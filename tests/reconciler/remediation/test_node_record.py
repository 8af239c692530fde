"""What remediation and rotation record: an Event on the Node or the Cluster, an Event on
each moved pod's app (its timeline), a JSON line in the audit log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kubernetes.dynamic.exceptions import DynamicApiError

from reconciler.remediation.record import MOVED_REASON, Recorder


class Events:
    """A connection whose Events are kept (``fail``: every create refused)."""

    def __init__(self, name: str, fail: bool = False) -> None:
        self.name, self.fail = name, fail
        self.created: list[tuple[str, dict[str, Any]]] = []

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        if self.fail:
            raise DynamicApiError(type("E", (), {"status": 403, "reason": "Forbidden",
                                                 "body": "{}", "headers": {}})())
        self.created.append((obj["metadata"]["namespace"], obj))
        return obj


POD = {"metadata": {"name": "web-1", "namespace": "shop", "labels": {
    "pincompute.io/app": "web", "pincompute.io/kind": "PinApp",
    "pincompute.io/project": "shop"}}}


def test_each_record_is_an_event_and_an_audit_line(tmp_path: Path) -> None:
    host, member = Events("host"), Events("c1")
    recorder = Recorder(host, tmp_path / "audit.jsonl")  # type: ignore[arg-type]
    recorder.node(member, "c1", "n1", "RemediationDrain", "cordon and drain: Ready=False",  # type: ignore[arg-type]
                  uid="u1", action="drain")
    recorder.cluster("c1", "RemediationCircuitOpen", "3 of 5 nodes", warning=True)
    recorder.moved("c1", "n1", POD, "remediation (Ready=False)")
    [(namespace, node_event)] = member.created
    assert namespace == "default" and node_event["involvedObject"] == {
        "apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "u1"}
    assert (node_event["reason"], node_event["type"]) == ("RemediationDrain", "Normal")
    (_, circuit), (project, moved) = host.created
    assert circuit["involvedObject"]["kind"] == "Cluster" and circuit["type"] == "Warning"
    assert project == "shop" and moved["reason"] == MOVED_REASON
    assert moved["involvedObject"]["name"] == "web" and moved["message"] == (
        "moved off node n1: remediation (Ready=False) (pod shop/web-1 evicted in c1)")
    lines = [json.loads(x) for x in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [(x["kind"], x["reason"], x.get("node")) for x in lines] == [
        ("nodes", "RemediationDrain", "n1"), ("nodes", "RemediationCircuitOpen", None)]
    assert lines[0]["action"] == "drain"


def test_a_refused_event_is_logged_and_the_work_goes_on(tmp_path: Path) -> None:
    recorder = Recorder(Events("host", fail=True))  # type: ignore[arg-type]
    recorder.cluster("c1", "RotationStarted", "rotating 3 nodes")
    recorder.moved("c1", "n1", POD, "rotation r1")
