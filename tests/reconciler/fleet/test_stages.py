"""kwok's stages (stages.yaml): which one applies to a pod or a volume, and what it does."""

from __future__ import annotations

import json

from reconciler.fleet import storage
from reconciler.fleet.components import STAGES


def test_stages_provision_volumes_for_every_fleet_storage_class() -> None:
    from ruamel.yaml import YAML

    stages = {d["metadata"]["name"]: d for d in YAML(typ="safe").load_all(STAGES.read_text())}
    assert {"node-initialize", "pod-ready", "pod-complete", "pod-fail", "pvc-provision"} <= set(
        stages)
    expr = stages["pvc-provision"]["spec"]["selector"]["matchExpressions"][0]["cel"]["expression"]
    for name in storage.STORAGE_CLASSES:
        assert f"'{name}'" in expr
    defaults = [c for c in storage.storage_classes() if c["metadata"]["annotations"][
        "storageclass.kubernetes.io/is-default-class"] == "true"]
    assert len(defaults) == 1


def _stages() -> dict[str, dict]:
    from ruamel.yaml import YAML

    return {d["metadata"]["name"]: d for d in YAML(typ="safe").load_all(STAGES.read_text())}


def _selector_text(stage: dict) -> str:
    return json.dumps(stage["spec"]["selector"]["matchExpressions"])


def test_never_ready_images_skip_pod_ready_and_get_their_own_stage() -> None:
    stages = _stages()
    never = "c.image.endsWith('-never-ready')"
    assert f"!self.spec.containers.exists(c, {never})" in _selector_text(stages["pod-ready"])
    own = stages["pod-never-ready"]
    assert f"self.spec.containers.exists(c, {never})" in _selector_text(own)
    assert "!self" not in _selector_text(own)
    template = own["spec"]["next"]["statusTemplate"]
    assert "phase: Running" in template and "ready: true" not in template.split(
        "initContainerStatuses")[0]


def test_pods_recover_only_where_no_other_stage_applies() -> None:
    """pod-ready-again must not compete with pod-complete/pod-fail (kwok picks one of the
    matching stages at random) nor with pod-never-ready."""
    stages = _stages()
    again = stages["pod-ready-again"]["spec"]["selector"]["matchExpressions"]
    policy = next(e for e in again if e.get("key") == ".spec.restartPolicy")
    assert policy["operator"] == "In" and policy["values"] == ["Always"]
    policies = {}
    for name in ("pod-complete", "pod-fail", "pod-restart-on-failure"):
        other = stages[name]["spec"]["selector"]["matchExpressions"]
        rule = next(e for e in other if e.get("key") == ".spec.restartPolicy")
        policies[name] = (rule["operator"], rule["values"])
    assert policies == {"pod-complete": ("NotIn", ["Always"]),
                        "pod-fail": ("In", ["Never"]),
                        "pod-restart-on-failure": ("In", ["OnFailure"])}
    assert "!self.spec.containers.exists" in json.dumps(again)
    template = stages["pod-ready-again"]["spec"]["next"]["statusTemplate"]
    assert 'status: "True"\n  type: Ready' in template


def test_a_failing_pod_ends_failed_under_never_and_restarts_under_on_failure() -> None:
    """Only one stage applies to a running run-to-completion pod: it completes without
    the exit-code annotation; with it, it fails (Never) or its containers restart
    (OnFailure), as a kubelet does, so restarts count against a backoff limit."""
    stages = _stages()

    def annotation(name: str) -> str:
        rules = stages[name]["spec"]["selector"]["matchExpressions"]
        return next(e["operator"] for e in rules if "exit-code" in e.get("key", ""))

    assert annotation("pod-complete") == "DoesNotExist"
    assert annotation("pod-fail") == annotation("pod-restart-on-failure") == "Exists"
    restart = stages["pod-restart-on-failure"]["spec"]
    assert restart["delay"]["durationMilliseconds"] == 10000  # a kubelet's first back-off
    template = restart["next"]["statusTemplate"]
    assert "restartCount: {{ add1 .restartCount }}" in template
    assert "phase" not in template  # the pod stays Running
