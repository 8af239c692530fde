"""The drain's requests on an in-memory cluster (:mod:`tests.support.kube_fake`): a cordon
is a merge patch of the Node, an eviction the Pod's ``eviction`` subresource (a refused
one says why), a drain step leaves DaemonSet and mirror pods, a Node delete says whether
there was one; a rotation reads the PodDisruptionBudgets with one LIST."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.clients.access import api_error
from reconciler.model import Obj
from reconciler.remediation import drain
from reconciler.rotation import apps
from tests.support.kube_fake import FakeAccess, FakeCluster

REFUSED = "Cannot evict pod as it would violate the pod's disruption budget."


def pod(name: str, node: str = "n1", **meta: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", **meta},
            "spec": {"nodeName": node, "containers": [{"name": "main", "image": "x"}]}}


@pytest.fixture
def conn() -> FakeAccess:
    cluster = FakeCluster("c1")
    cluster.put({"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": "n1", "annotations": {"old": "x"}}, "spec": {}})
    for obj in (pod("web-1"), pod("web-2"), pod("elsewhere", node="n2"),
                pod("agent", ownerReferences=[{"kind": "DaemonSet", "name": "agent"}]),
                pod("static", annotations={drain.MIRROR_ANNOTATION: "m"})):
        cluster.put(obj)
    return FakeAccess("c1", cluster)


def test_a_cordon_patches_the_node_and_an_uncordon_removes_the_field(
        conn: FakeAccess) -> None:
    node = drain.cordon(conn, "n1", {"new": "y", "old": None})
    assert node["spec"] == {"unschedulable": True}
    assert node["metadata"]["annotations"] == {"new": "y"}
    assert drain.patch(conn, "n1", unschedulable=False)["spec"] == {}
    assert conn.stats.by_verb == {"patch": 2}


def test_a_step_evicts_the_pods_it_moves_and_says_which_were_refused(
        conn: FakeAccess) -> None:
    def budget(target: Obj) -> None:
        if target["metadata"]["name"] == "web-2":
            raise api_error(429, REFUSED, "TooManyRequests")

    conn.cluster.evicting.append(budget)
    step = drain.drain_step(conn, "n1")
    assert [p["metadata"]["name"] for p in step.evicted] == ["web-1"]
    assert step.blocked == [f"default/web-2: {REFUSED}"] and step.remaining == 2
    assert conn.stats.writes_by_resource == {"pods": 2}
    assert [p["metadata"]["name"] for p in drain.pods_on(conn, "n1")] == ["web-2"]
    assert drain.evict(conn, pod("gone")) is None  # already gone: nothing to evict


def test_a_node_delete_says_whether_there_was_one(conn: FakeAccess) -> None:
    assert drain.delete_node(conn, "n1") and not drain.delete_node(conn, "n1")


def test_a_rotation_reads_every_budget_with_one_list(conn: FakeAccess) -> None:
    conn.cluster.put({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                      "metadata": {"name": "web", "namespace": "default"},
                      "spec": {"selector": {"matchLabels": {"app": "web"}}},
                      "status": {"disruptionsAllowed": 0}})
    assert [b["metadata"]["name"] for b in apps.budgets(conn)] == ["web"]
    assert conn.stats.lists == {"poddisruptionbudgets": 1}
