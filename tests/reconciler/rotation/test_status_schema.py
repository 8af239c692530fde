"""What remediation and rotation keep in a Cluster's status is what the host's CRD admits
(the API server refuses a status that breaks its schema, and the state would be lost)."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from pincompile import crds
from pincompile.contract import RemediationPolicy, RotationPolicy
from reconciler.clock import parse_time
from reconciler.remediation.controller import Remediator
from reconciler.remediation.metrics import NodeMetrics
from reconciler.rotation import plan
from tests.support.fake_nodes import STAMP, FakeCluster, Recorded


def status_schema() -> dict[str, Any]:
    crd = next(c for c in crds.all_crds() if c["spec"]["names"]["kind"] == "Cluster")
    return dict(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"][
        "status"])


def test_a_rotation_s_status_fits_the_crd_at_every_step(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from reconciler.rotation.controller import Rotator

    cluster = FakeCluster(2, {"web": 2}).install(monkeypatch)
    rotor = Rotator(Recorded(), NodeMetrics())  # type: ignore[arg-type]
    stored: Any = None
    for _ in range(12):
        stored = rotor.tick(cluster.member, RotationPolicy(), plan.Request("r1", "ada"),
                            None, stored) or stored
        jsonschema.validate({"rotation": stored}, status_schema())
        cluster.settle()


def test_remediation_s_status_fits_the_crd(monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = FakeCluster(5, {"web": 3}).install(monkeypatch)
    cluster.condition("node-0", "KernelDeadlock", "True")
    policy = RemediationPolicy.model_validate(
        {"signals": [{"condition": "KernelDeadlock", "after": "0s"}]})
    later = (parse_time(STAMP) or 0.0) + 60
    doc = Remediator(Recorded(), NodeMetrics(), lambda: later).tick(  # type: ignore[arg-type]
        cluster.member, policy, None)
    assert doc is not None and doc["actions"]
    jsonschema.validate({"remediation": doc}, status_schema())
