"""Node health of a fleet cluster: Ready nodes and how fresh the node Leases are.

A node stays Ready while its kwok renews the node's Lease (``kube-node-lease``); the node
controller marks it NotReady when no renewal came for its grace period. So "all nodes
Ready, oldest Lease renewal a few seconds old" is what a healthy cluster looks like.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

NODE_LEASE_NAMESPACE = "kube-node-lease"


@dataclass
class NodeHealth:
    """Nodes of one cluster: how many are Ready, and the age of the stalest Lease."""

    cluster: str
    reachable: bool = True
    total: int = 0
    ready: int = 0
    not_ready: list[str] = field(default_factory=list)
    #: seconds since the least recently renewed node Lease (None: no node has one)
    oldest_lease_age: float | None = None
    #: nodes without a Lease
    no_lease: list[str] = field(default_factory=list)
    error: str = ""

    @property
    def healthy(self) -> bool:
        return self.reachable and self.total > 0 and self.ready == self.total

    def to_json(self) -> dict[str, Any]:
        return {"ready": self.ready, "total": self.total, "notReady": self.not_ready,
                "oldestLeaseRenewalSeconds": (None if self.oldest_lease_age is None
                                              else round(self.oldest_lease_age, 1)),
                "nodesWithoutLease": self.no_lease, "reachable": self.reachable,
                "error": self.error}

    def summary(self) -> str:
        """``nodes 3/3 Ready, oldest lease renewal 4s ago`` (or why not)."""
        if not self.reachable:
            return f"nodes unknown ({self.error})"
        text = f"nodes {self.ready}/{self.total} Ready"
        if self.not_ready:
            text += f" (NOT Ready: {', '.join(self.not_ready)})"
        if self.oldest_lease_age is not None:
            text += f", oldest lease renewal {self.oldest_lease_age:.0f}s ago"
        if self.no_lease:
            text += f", {len(self.no_lease)} without a lease"
        return text


def is_ready(node: Any) -> bool:
    """True when the node's Ready condition is True."""
    return any(c.type == "Ready" and c.status == "True"
               for c in (node.status.conditions or []))


def lease_ages(leases: list[Any], now: dt.datetime) -> dict[str, float]:
    """Lease name (= node name) -> seconds since its last renewal."""
    ages = {}
    for lease in leases:
        renewed = lease.spec.renew_time if lease.spec else None
        if renewed is not None:
            ages[lease.metadata.name] = (now - renewed).total_seconds()
    return ages


def node_health(api: Any, cluster: str, now: dt.datetime | None = None,
                timeout: float = 5.0) -> NodeHealth:
    """Read the nodes and node Leases of the cluster behind ``api`` (an ApiClient)."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException
    from urllib3.exceptions import HTTPError

    health = NodeHealth(cluster=cluster)
    try:
        nodes: list[Any] = client.CoreV1Api(api).list_node(_request_timeout=timeout).items
        leases: list[Any] = client.CoordinationV1Api(api).list_namespaced_lease(
            NODE_LEASE_NAMESPACE, _request_timeout=timeout).items
    except (ApiException, HTTPError, OSError) as exc:
        health.reachable = False
        health.error = (f"{exc.status} {exc.reason}" if isinstance(exc, ApiException)
                        else "unreachable")
        return health
    ages = lease_ages(leases, now or dt.datetime.now(dt.UTC))
    names = [n.metadata.name for n in nodes]
    health.total = len(nodes)
    health.ready = sum(1 for n in nodes if is_ready(n))
    health.not_ready = sorted(n.metadata.name for n in nodes if not is_ready(n))
    health.no_lease = sorted(name for name in names if name not in ages)
    known = [ages[name] for name in names if name in ages]
    health.oldest_lease_age = max(known) if known else None
    return health
