"""The Prometheus metrics of remediation and rotation, in ``serve``'s registry."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

PREFIX = "pincompile_serve"


class NodeMetrics:
    """Every metric docs/operations.md lists; ``registry``: serve's (``/metrics``)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        r = registry or CollectorRegistry()
        self.actions = Counter(
            f"{PREFIX}_remediation_actions_total", "Remediation actions by member cluster, "
            "action (cordon, drain, terminate, uncordon) and mode (enforce; dry-run: what "
            "would have been done)", ["cluster", "action", "mode"], registry=r)
        self.circuit = Gauge(
            f"{PREFIX}_remediation_circuit_open", "1 while the circuit breaker of a scope "
            "(the cluster, or zone/<zone>) is open: too many nodes unhealthy, nothing done",
            ["cluster", "scope"], registry=r)
        self.unhealthy = Gauge(
            f"{PREFIX}_remediation_unhealthy_nodes", "Nodes with a remediation signal now",
            ["cluster"], registry=r)
        self.waiting = Gauge(
            f"{PREFIX}_remediation_waiting_nodes", "Nodes whose signal held long enough but "
            "that a limit or the circuit breaker holds back", ["cluster"], registry=r)
        self.evictions = Counter(
            f"{PREFIX}_node_evictions_total", "Evictions asked of the Eviction API, by member "
            "cluster, cause (remediation, rotation) and result (evicted; blocked: a "
            "PodDisruptionBudget refused)", ["cluster", "cause", "result"], registry=r)
        self.rotated = Counter(
            f"{PREFIX}_rotation_nodes_replaced_total", "Nodes a rotation replaced",
            ["cluster"], registry=r)
        self.rotation_left = Gauge(
            f"{PREFIX}_rotation_nodes_remaining", "Nodes the rotation in progress has yet to "
            "replace (0: none in progress)", ["cluster"], registry=r)
        self.node_seconds = Histogram(
            f"{PREFIX}_rotation_node_seconds", "From a node's cordon to its replacement "
            "Ready, per node rotated", ["cluster"], registry=r,
            buckets=(5, 10, 20, 30, 60, 120, 300, 600, 1200, 3600))
        self.round_seconds = Histogram(
            f"{PREFIX}_nodes_round_seconds", "One round of remediation and rotation over the "
            "member clusters this replica leads", registry=r,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))

    def set_circuits(self, cluster: str, circuits: dict[str, bool]) -> None:
        for scope, is_open in circuits.items():
            self.circuit.labels(cluster, scope).set(1 if is_open else 0)
