"""The canary's schedule: which clusters and tiers it probes, only while leading and only
the clusters this replica reconciles, one probe per cluster at a time, every result
recorded; and the objects it writes (never the reconciler's, restricted pods, quotas
sized as a pass would)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pincompile.compiler import compile_path
from pincompile.contract import MANAGED_BY, CanaryPolicy, Result, compile_probe
from reconciler.canary import schedule
from reconciler.canary.probe import (
    CANARY_MANAGER,
    LABEL_CANARY,
    ProbeResult,
    canary_objects,
    quota_changes,
)
from reconciler.canary.schedule import Canary, targets

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
POLICY = "canary: {project: platform-system, interval: 30s, timeout: 20s}\n"


@pytest.fixture(scope="module")
def served() -> Result:
    result = compile_path(EXAMPLES)
    assert result.ok
    result.sources["pincompile.yaml"] += POLICY
    return result


def test_every_schedulable_cluster_that_sells_the_tier_is_probed(served: Result) -> None:
    policy = CanaryPolicy(project="platform-system", tiers=["reserved", "ondemand"])
    pairs = targets(served, policy)
    assert ("usw2a-staging-01", "ondemand") in pairs
    assert ("usw2a-staging-01", "reserved") not in pairs  # it sells no reserved tier
    assert len(pairs) == 11
    named = CanaryPolicy(project="platform-system", clusters=["usw2a-staging-01"])
    assert targets(served, named) == [("usw2a-staging-01", "reserved")]  # named: probed


class Recorder:
    """Stands in for :class:`Probe`: records who was probed, waits while ``hold`` is set."""

    def __init__(self) -> None:
        self.probed: list[tuple[str, str]] = []
        self.hold = threading.Event()
        self.lock = threading.Lock()

    def __call__(self, _conn: Any, _served: Any, _policy: Any, cluster: str, tier: str
                 ) -> Any:
        recorder = self

        class Run:
            def run(self) -> ProbeResult:
                with recorder.lock:
                    recorder.probed.append((cluster, tier))
                while recorder.hold.is_set():
                    recorder.hold.wait(0.01)
                return ProbeResult(cluster, tier, datetime.now(UTC), ok=cluster != "use1c-gpu-01",
                                   stage="passed" if cluster != "use1c-gpu-01" else "launch")
        return Run()


@pytest.fixture
def canary(served: Result, monkeypatch: pytest.MonkeyPatch) -> tuple[Canary, Recorder,
                                                                       list[ProbeResult]]:
    recorder = Recorder()
    monkeypatch.setattr(schedule, "Probe", recorder)
    monkeypatch.setattr(schedule, "sweep", lambda *_a: 0)
    monkeypatch.setattr(Canary, "_connection", lambda self, _r, _c: object())
    recorded: list[ProbeResult] = []
    leading: dict[str, frozenset[str] | None] = {"mine": None}

    def responsible(clusters: Sequence[str]) -> frozenset[str] | None:
        mine = leading["mine"]
        return None if mine is None else mine & frozenset(clusters)

    found = Canary(None, lambda: served, responsible=responsible, record=[recorded.append])
    found.leading = leading  # type: ignore[attr-defined]
    return found, recorder, recorded


def test_a_standby_probes_nothing_and_a_leader_only_its_clusters(canary: Any) -> None:
    found, recorder, recorded = canary
    assert found.round() == 30.0 and recorder.probed == []
    assert found.note == "standby: the leader probes"
    found.leading["mine"] = frozenset({"use1a-general-01", "use1c-gpu-01"})
    found.round()
    assert sorted(recorder.probed) == [("use1a-general-01", "reserved"),
                                       ("use1c-gpu-01", "reserved")]
    assert [(r.cluster, r.ok) for r in sorted(recorded, key=lambda r: r.cluster)] == [
        ("use1a-general-01", True), ("use1c-gpu-01", False)]
    assert "1 failed: use1c-gpu-01/reserved" in found.note


def test_a_round_skips_a_cluster_whose_probe_runs_and_verify_waits_for_it(canary: Any
                                                                          ) -> None:
    found, recorder, _ = canary
    found.leading["mine"] = frozenset({"use1a-general-01"})
    recorder.hold.set()
    verifying = threading.Thread(target=found.verify, args=(["use1a-general-01"],))
    verifying.start()
    while not recorder.probed:
        threading.Event().wait(0.01)
    found.round()  # the cluster is busy: skipped, not queued
    recorder.hold.clear()
    verifying.join(10)
    assert recorder.probed == [("use1a-general-01", "reserved")]


def test_verify_names_unknown_clusters(canary: Any) -> None:
    found, _, _ = canary
    with pytest.raises(ValueError, match="no member cluster nowhere"):
        found.verify(["nowhere"])


def test_the_canarys_objects_are_its_own_and_its_pods_restricted(served: Result) -> None:
    policy = CanaryPolicy(project="platform-system", replicas=2)
    probe = compile_probe(served.sources, policy, "pincompile-canary-rese-0a0b0c",
                          "use1a-general-01", "reserved", revision="abc")
    objects = canary_objects(probe.manifests, "pincompile-canary-rese-0a0b0c")
    assert [o["kind"] for o in objects] == ["Deployment", "PodDisruptionBudget"]
    for obj in objects:
        assert obj["metadata"]["labels"][MANAGED_BY] == CANARY_MANAGER
        assert obj["metadata"]["labels"][LABEL_CANARY] == "pincompile-canary-rese-0a0b0c"
    pod = objects[0]["spec"]["template"]["spec"]
    assert objects[0]["spec"]["template"]["metadata"]["labels"][MANAGED_BY] == CANARY_MANAGER
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    for container in [*pod.get("initContainers", ()), *pod["containers"]]:
        context = container["securityContext"]
        assert context["allowPrivilegeEscalation"] is False, container["name"]
        assert context["capabilities"]["drop"] == ["ALL"], container["name"]
        assert context.get("runAsUser", pod["securityContext"].get("runAsUser")) != 0
        assert not context.get("privileged")
    assert probe.manifests[0].obj["metadata"]["labels"][MANAGED_BY] == "pincompile"


def test_the_projects_quota_is_raised_as_a_pass_would_and_restored_after(served: Result
                                                                          ) -> None:
    policy = CanaryPolicy(project="platform-system")
    probe = compile_probe(served.sources, policy, "pincompile-canary-rese-0a0b0c",
                          "use1a-general-01", "reserved", revision="abc")
    raised, restore = quota_changes(served.manifests, probe.quotas)
    assert [q["metadata"]["name"] for q in raised] == ["pincompute-reserved"]
    assert restore[0]["spec"]["hard"]["requests.cpu"] == "0"  # nothing reserved there
    assert raised[0]["spec"]["hard"]["requests.cpu"] != "0"
