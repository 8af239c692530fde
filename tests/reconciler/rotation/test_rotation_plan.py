"""A rotation's pure parts: the request, the order and batches, windows, and which new node
replaces which."""

from __future__ import annotations

import pytest

from pincompile.contract import RotationPolicy
from reconciler.clock import parse_time
from reconciler.remediation.nodes import POOL_VERSION_LABEL, NodeView
from reconciler.rotation import plan
from reconciler.rotation.plan import Request, RequestError

NOW = parse_time("2027-01-16T03:00:00Z") or 0.0  # a Saturday


def view(name: str, pool: str = "general", *, created: float = NOW - 86400,
         ready: bool = True, version: str = "") -> NodeView:
    return NodeView(name, pool=pool, uid=f"uid-{name}", created=created,
                    conditions={"Ready": ("True" if ready else "False", created)},
                    labels={POOL_VERSION_LABEL: version} if version else {})


def test_a_request_round_trips_and_a_hand_written_one_is_refused() -> None:
    request = Request(id="r1", by="ada", pool="gpu", batch=2, pause="2m")
    assert plan.parse_request(request.to_json()) == request
    assert plan.parse_request(None) is None
    for text in ("{", '{"by": "ada"}', '{"id": "r", "batch": 0}', '{"id": "r", "batch": "x"}'):
        with pytest.raises(RequestError):
            plan.parse_request(text)


def test_nodes_go_in_pool_order_then_by_name_and_a_pool_can_be_chosen() -> None:
    nodes = [view("g2"), view("a1", "gpu"), view("g1"), view("x1", "infra"), view("b1", "batch")]
    order = plan.ordered(nodes, ["gpu", "general"])
    assert [n.name for n in order] == ["a1", "g1", "g2", "b1", "x1"]
    assert [n.name for n in plan.ordered(nodes, [], "general")] == ["g1", "g2"]


def test_a_request_s_batch_and_pause_win_over_the_policy_s() -> None:
    policy = RotationPolicy(batch=3, pause="5m")
    rotation = plan.start(Request("r1", "ada", batch=1, pause="30s"), policy,
                          [view("g1"), view("g2")], NOW)
    assert (rotation.batch, rotation.pause, rotation.phase) == (1, 30.0, "Running")
    assert [(n.name, n.state, n.uid) for n in rotation.nodes] == [
        ("g1", "Pending", "uid-g1"), ("g2", "Pending", "uid-g2")]
    assert plan.start(Request("r2", "ada"), policy, [view("g1")], NOW).batch == 3
    empty = plan.start(Request("r3", "ada", pool="gpu"), policy, [view("g1")], NOW)
    assert (empty.phase, empty.message) == ("Complete", "no node to rotate in pool gpu")


def test_the_status_document_round_trips() -> None:
    rotation = plan.start(Request("r1", "ada"), RotationPolicy(), [view("g1"), view("g2")],
                          NOW)
    rotation.nodes[0] = plan.replaced(rotation.nodes[0], view("g9", version="v2"), NOW + 30)
    rotation.nodes[1].affected = ["Deployment/shop/web"]
    back = plan.from_status(rotation.to_status())
    assert back is not None and back.to_status() == rotation.to_status()
    assert back.nodes[0].replacement == "g9" and back.nodes[0].version == "v2"
    assert plan.from_status({"id": "r1", "nodes": [{"nope": 1}]}) is None


def test_a_batch_starts_only_inside_a_window() -> None:
    saturday_night = RotationPolicy.model_validate(
        {"windows": [{"cron": "0 2 * * 6", "duration": "4h"}]})
    assert plan.window(RotationPolicy(), NOW) is None
    assert plan.window(saturday_night, NOW) is None
    assert plan.window(saturday_night, NOW + 4 * 3600) == \
        "outside the rotation windows; the next opens at 2027-01-23T02:00:00Z"


def test_each_removed_node_gets_one_fresh_ready_node_of_its_pool() -> None:
    rotation = plan.start(Request("r1", "ada"), RotationPolicy(),
                          [view("g1"), view("g2"), view("a1", "gpu")], NOW)
    for node in rotation.nodes:
        node.state, node.since = "Removed", NOW + 10
    nodes = [view("g1-new", created=NOW + 20, version="v2"),
             view("old", created=NOW - 10),
             view("g2-new", created=NOW + 30, ready=False),
             view("a1-new", "gpu", created=NOW + 25)]
    assert [(old, new.name) for old, new in plan.replacements(rotation, nodes)] == [
        ("a1", "a1-new"), ("g1", "g1-new")]
    rotation.nodes[0].replacement = "g1-new"
    assert [old for old, _ in plan.replacements(rotation, nodes)] == ["a1"]
