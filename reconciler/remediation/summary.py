"""One line about a member cluster's nodes for people (the console's member panel): the
circuit breaker, unhealthy nodes, a rotation in progress — from the Cluster's status."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


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
