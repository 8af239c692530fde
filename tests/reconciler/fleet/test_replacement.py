"""The local fleet's replacement nodes: a clone of a pool's node under a new name and
version, without what the node controller put on the old one."""

from __future__ import annotations

from reconciler.fleet.nodes import KWOK_ANNOTATION, METRICS_PATH_ANNOTATION
from reconciler.fleet.replacement import POOL_VERSION_LABEL, clone

OLD = {
    "metadata": {"name": "c-general-0", "uid": "u1", "resourceVersion": "9",
                 "labels": {"kubernetes.io/hostname": "c-general-0",
                            "pincompute.io/node-pool": "general", "zone": "z"},
                 "annotations": {KWOK_ANNOTATION: "fake", "pincompute.io/remediation": "{}"}},
    "spec": {"unschedulable": True, "taints": [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]},
    "status": {"allocatable": {"cpu": "16"}, "capacity": {"cpu": "16"},
               "nodeInfo": {"kubeletVersion": "v1.33.0"}, "conditions": [{"type": "Ready"}]},
}


def test_a_replacement_is_the_pool_s_node_under_a_new_name_and_version() -> None:
    new = clone(OLD, "c-general-v2-1", {POOL_VERSION_LABEL: "v2"})
    meta = new["metadata"]
    assert meta["name"] == "c-general-v2-1" and "uid" not in meta
    assert meta["labels"] == {"kubernetes.io/hostname": "c-general-v2-1",
                              "pincompute.io/node-pool": "general", "zone": "z",
                              POOL_VERSION_LABEL: "v2"}
    assert meta["annotations"][METRICS_PATH_ANNOTATION] == \
        "/metrics/nodes/c-general-v2-1/metrics/resource"
    assert "pincompute.io/remediation" not in meta["annotations"]
    assert new["spec"] == {"taints": [{"key": "nvidia.com/gpu", "value": "present",
                                       "effect": "NoSchedule"}]}
    assert new["status"] == {"allocatable": {"cpu": "16"}, "capacity": {"cpu": "16"},
                             "nodeInfo": {"kubeletVersion": "v1.33.0"},
                             "addresses": [{"address": "127.0.0.1", "type": "InternalIP"},
                                           {"address": "c-general-v2-1", "type": "Hostname"}]}


def test_kwok_s_node_stages_leave_a_held_node_s_status_alone() -> None:
    import yaml

    from reconciler.fleet.components import STAGES
    from reconciler.fleet.replacement import HOLD_ANNOTATION

    stages = {d["metadata"]["name"]: d for d in yaml.safe_load_all(STAGES.read_text())}
    for name in ("node-initialize", "node-heartbeat-with-lease"):
        expressions = stages[name]["spec"]["selector"]["matchExpressions"]
        assert {"key": f'.metadata.annotations["{HOLD_ANNOTATION}"]',
                "operator": "DoesNotExist"} in expressions, name
