"""A member cluster's nodes for people (the console's member panel): one line about the
circuit breaker, unhealthy nodes and a rotation in progress, from the Cluster's status;
and the nodes carrying a signal of its remediation policy, from its Nodes."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pincompile.contract import RemediationPolicy
from reconciler.clock import iso_time
from reconciler.remediation.decide import present_signals
from reconciler.remediation.nodes import NodeView

UNSEEN = math.inf
"""The clock :func:`signalled_nodes` gives :func:`present_signals`: a signal whose start the
node does not carry (an annotation) comes back starting then, so it is told apart."""


def care_summary(status: Mapping[str, Any] | None) -> str:
    """``circuit open: ...``, ``2 of 5 nodes unhealthy``, ``rotating: 1 of 3 replaced
    (Waiting: ...)``, joined by ``; `` (empty: nothing to say)."""
    status = status or {}
    parts = []
    remediation = status.get("remediation") or {}
    if remediation.get("circuit") == "Open":
        parts.append(f"circuit open: {remediation.get('reason') or ''}".rstrip(": "))
    elif remediation.get("unhealthy"):
        parts.append(f"{remediation['unhealthy']} of {remediation.get('nodes', '?')} nodes "
                     "unhealthy")
    rotation = status.get("rotation") or {}
    if rotation and rotation.get("phase") != "Complete":
        nodes = rotation.get("nodes") or []
        done = sum(1 for n in nodes if n.get("state") == "Replaced")
        parts.append(f"rotating: {done} of {len(nodes)} replaced ({rotation.get('phase')}"
                     + (f": {rotation['message']}" if rotation.get("message") else "") + ")")
    return "; ".join(parts)


@dataclass(frozen=True)
class Signal:
    """A signal of the remediation policy present on a node."""

    name: str
    """``Ready=False|Unknown``, ``KernelDeadlock=True``, ``pincompute.io/disk-failing``."""
    since: str = ""
    """When it came (RFC 3339, the condition's lastTransitionTime); empty when the node
    does not say (an annotation: serve counts from when it first saw it)."""


@dataclass(frozen=True)
class SignalledNode:
    """A node carrying a signal, as the member panel lists it."""

    name: str
    zone: str
    signals: tuple[Signal, ...]
    cordoned: bool
    remediation: str = ""
    """What remediation did to it (``drain: draining``; empty: nothing)."""


def signalled_nodes(nodes: Iterable[NodeView], policy: RemediationPolicy
                    ) -> list[SignalledNode]:
    """The nodes on which a signal of ``policy`` is present (what remediation counts as
    unhealthy, held long enough or not), by name."""
    found = []
    for node in sorted(nodes, key=lambda n: n.name):
        present = present_signals(node, policy, UNSEEN, {})
        if not present:
            continue
        mark = node.mark
        found.append(SignalledNode(
            node.name, node.zone,
            tuple(Signal(p.signal.name, "" if p.since == UNSEEN else iso_time(p.since))
                  for p in present),
            node.unschedulable, f"{mark.action}: {mark.phase}" if mark else ""))
    return found
