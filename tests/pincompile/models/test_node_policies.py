"""A Cluster's remediation and rotation policies: checked where they are written, and
their defaults."""

from __future__ import annotations

import textwrap

import pytest

from pincompile.models.nodes import NodeSignal, RemediationPolicy, RotationPolicy
from tests.support.specs import doc, files, triples, validate

CLUSTER = "platform/clusters/nodes.yaml"
HEAD = """
    apiVersion: pincompute.io/v1
    kind: Cluster
    metadata: {name: nodes-01}
    spec:
      region: us-east-1
      zone: us-east-1a
    """


def diagnostics(tail: str) -> list[tuple[str, str, str]]:
    text = doc(HEAD) + textwrap.indent(doc(tail), "  ")
    return [t for t in triples(validate(files({CLUSTER: text}))) if t[0].startswith(CLUSTER)]


def test_a_full_policy_is_valid() -> None:
    assert diagnostics("""
          remediation:
            mode: dry-run
            signals:
              - {condition: Ready, after: 5m, action: drain}
              - {condition: KernelDeadlock, status: ["True"], after: 1m, action: terminate}
              - {annotation: pincompute.io/disk-failing, after: 0s, action: cordon}
            limits: {maxActionsPerHour: 5, maxDrainsPerZone: 2, maxUnhealthy: 3}
            drainTimeout: 30m
          rotation:
            pools: [general, gpu]
            batch: 2
            pause: 2m
            windows: [{cron: "0 2 * * 6", duration: 4h, timezone: Europe/Paris}]
        """) == []


@pytest.mark.parametrize(("tail", "expected"), [
    ("""
      remediation:
        signals: [{condition: Ready, annotation: pincompute.io/x}]
    """, ("8:27", "spec.remediation.signals[0].condition: a signal names exactly one of "
                "condition or annotation")),
    ("""
      remediation:
        signals: [{annotation: example.com/sick}]
    """, ("8:28", "spec.remediation.signals[0].annotation: annotation signals live under "
                "pincompute.io/ (got 'example.com/sick')")),
    ("""
      remediation:
        signals: [{condition: Ready, after: soon}]
    """, ("8:41", "spec.remediation.signals[0].after: 'soon' is not a duration (examples: "
                "30s, 5m, 1h, 1h30m)")),
    ("""
      remediation:
        signals: [{condition: Ready}, {condition: Ready}]
    """, ("8:35", "spec.remediation.signals[1]: signal Ready=False|Unknown is listed twice")),
    ("""
      remediation:
        signals: [{condition: Ready}]
        limits: {maxUnhealthy: 140%}
    """, ("9:28", "spec.remediation.limits.maxUnhealthy: '140%' is neither a whole number "
                 "nor a percentage such as '25%'")),
    ("""
      remediation:
        signals: []
    """, ("8:14", "spec.remediation.signals: needs at least one item")),
    ("""
      rotation: {pools: [general, general]}
    """, ("7:31", "spec.rotation.pools[1]: pool 'general' is listed twice")),
    ("""
      rotation: {batch: 0}
    """, ("7:21", "spec.rotation.batch: 0: input should be greater than or equal to 1")),
], ids=["condition-and-annotation", "annotation-prefix", "after", "twice", "max-unhealthy",
        "no-signal", "pool-twice", "batch"])
def test_a_wrong_policy_is_a_located_error(tail: str, expected: tuple[str, str]) -> None:
    found = [(where.split(":", 1)[1], message) for where, _code, message in diagnostics(tail)]
    assert expected in found, found


def test_defaults_fill_in_what_a_signal_and_the_limits_leave_out() -> None:
    policy = RemediationPolicy.model_validate({"signals": [{"condition": "Ready"},
                                                           {"condition": "KernelDeadlock"}]})
    ready, deadlock = policy.signals
    assert (ready.statuses, ready.after, ready.action) == (("False", "Unknown"), "5m", "drain")
    assert deadlock.statuses == ("True",)
    assert policy.limits.model_dump() == {"max_actions_per_hour": 3, "max_drains_per_zone": 1,
                                          "max_unhealthy": "40%"}
    assert NodeSignal(annotation="pincompute.io/x").name == "pincompute.io/x"
    assert RotationPolicy().model_dump(include={"batch", "pause", "pools"}) == {
        "batch": 1, "pause": "0s", "pools": []}
