"""What a Cluster says about its nodes: when a node counts as unhealthy and what is done
about it (``remediation``), and how its nodes are replaced (``rotation``). ``pincompile
serve`` acts on both (docs/operations.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from pincompile.models.base import Strict
from pincompile.models.types import (
    Cron,
    Duration,
    IntOrPercent,
    LabelKey,
    TimeZone,
    duration_seconds,
    located_error,
)

RemediationAction = Literal["cordon", "drain", "terminate"]
ConditionStatus = Literal["True", "False", "Unknown"]
SIGNAL_PREFIX = "pincompute.io/"
"""Annotation signals live under this prefix (a health probe writes them on the node)."""


class NodeSignal(Strict):
    """One way a node is unhealthy: a node condition in one of ``status`` (``Ready``
    False or Unknown, a node-problem-detector condition such as ``KernelDeadlock`` True),
    or a ``pincompute.io/`` annotation a health probe set on the node; held for ``after``,
    it triggers ``action``."""

    condition: str | None = Field(default=None, min_length=1, max_length=316,
                                  pattern=r"^[A-Za-z][A-Za-z0-9_.\-/]*$")
    """A node condition type, e.g. Ready, KernelDeadlock, ReadonlyFilesystem."""
    status: list[ConditionStatus] = Field(default_factory=list)
    """The condition's statuses that count as unhealthy (default: False and Unknown for
    Ready, True for any other condition)."""
    annotation: LabelKey | None = None
    """A node annotation under pincompute.io/ whose presence counts as unhealthy (its value
    says why)."""
    after: Duration = "5m"
    """How long the signal must hold before anything is done (a condition's
    lastTransitionTime counts; an annotation counts from when serve first saw it)."""
    action: RemediationAction = "drain"
    """cordon (nothing new is scheduled there); drain (cordon, then evict every pod
    through the Eviction API, honouring PodDisruptionBudgets); terminate (drain, then
    delete the Node, which hands the machine back to its provider)."""

    @model_validator(mode="after")
    def _one_source(self) -> NodeSignal:
        if (self.condition is None) == (self.annotation is None):
            raise located_error("a signal names exactly one of condition or annotation",
                                "condition")
        if self.annotation is not None:
            if not self.annotation.startswith(SIGNAL_PREFIX):
                raise located_error(f"annotation signals live under {SIGNAL_PREFIX} (got "
                                    f"'{self.annotation}')", "annotation")
            if self.status:
                raise located_error("status is for condition signals", "status")
        return self

    @property
    def statuses(self) -> tuple[str, ...]:
        """The condition statuses that count as unhealthy, defaults filled in."""
        if self.status:
            return tuple(self.status)
        return ("False", "Unknown") if self.condition == "Ready" else ("True",)

    @property
    def name(self) -> str:
        """``Ready=False|Unknown`` or the annotation's key, for messages."""
        if self.condition is not None:
            return f"{self.condition}={'|'.join(self.statuses)}"
        return str(self.annotation)


class RemediationLimits(Strict):
    """How much remediation may do at once."""

    max_actions_per_hour: int = Field(default=3, ge=0, le=1000)
    """Nodes remediated (cordoned, drained or terminated) in any hour, per cluster."""
    max_drains_per_zone: int = Field(default=1, ge=1, le=100)
    """Drains in progress at a time in one zone."""
    max_unhealthy: IntOrPercent = "40%"
    """Circuit breaker: when more nodes than this (a count, or a share of the cluster's or
    a zone's nodes, rounded down) are unhealthy at once, nothing is done there, a Warning
    Event is raised and the metric set: a mass failure is an incident, not a node
    problem."""


class RemediationPolicy(Strict):
    """When a node counts as unhealthy and what is done about it."""

    mode: Literal["enforce", "dry-run"] = "enforce"
    """dry-run: decide, and report (Events, metrics, status) what would be done."""
    signals: list[NodeSignal] = Field(min_length=1, max_length=50)
    limits: RemediationLimits = Field(default_factory=RemediationLimits)
    drain_timeout: Duration = "15m"
    """A drain still blocked after this (a PodDisruptionBudget that never allows an
    eviction) is reported with a Warning Event each time it passes; it keeps waiting and
    never deletes a pod around a budget."""
    uncordon: bool = True
    """Make a node schedulable again once no signal holds for its ``after`` (only nodes
    remediation cordoned and did not terminate)."""

    @model_validator(mode="after")
    def _distinct(self) -> RemediationPolicy:
        seen: set[str] = set()
        for index, signal in enumerate(self.signals):
            if signal.name in seen:
                raise located_error(f"signal {signal.name} is listed twice", "signals", index)
            seen.add(signal.name)
        return self


class RotationWindow(Strict):
    """When a rotation may start a batch: from each time ``cron`` matches, for
    ``duration``, on the wall clock of ``timezone``."""

    cron: Cron
    duration: Duration
    timezone: TimeZone = "Etc/UTC"


class RotationPolicy(Strict):
    """How ``pincompile rotate`` replaces the cluster's nodes."""

    pools: list[str] = Field(default_factory=list, max_length=50)
    """Pools (the node label pincompute.io/node-pool) in the order they are rotated; nodes
    of a pool not listed go last, in name order."""
    batch: int = Field(default=1, ge=1, le=100)
    """Nodes replaced at once."""
    pause: Duration = "0s"
    """Wait between batches."""
    windows: list[RotationWindow] = Field(default_factory=list, max_length=20)
    """A batch starts only while one is open (none: any time)."""
    step_timeout: Duration = "10m"
    """A step (apps back, a replacement node Ready) waiting longer is reported with a
    Warning Event; it keeps waiting."""

    @model_validator(mode="after")
    def _pools_once(self) -> RotationPolicy:
        for index, pool in enumerate(self.pools):
            if pool in self.pools[:index]:
                raise located_error(f"pool '{pool}' is listed twice", "pools", index)
        for index, window in enumerate(self.windows):
            if duration_seconds(window.duration) <= 0:
                raise located_error("a window lasts longer than 0s", "windows", index,
                                    "duration")
        return self


__all__ = ["NodeSignal", "RemediationLimits", "RemediationPolicy", "RotationPolicy",
           "RotationWindow"]
