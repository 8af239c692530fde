"""Cluster-level scheduling: filters → scores → division, and quota per project and tier.

``plan(catalog)`` returns the :class:`Plan` (a :class:`Decision` with :class:`Shard` s per
workload, per-cluster ResourceQuota sizes, sidecar daemons) and the diagnostics it found.
"""

from __future__ import annotations

from pincompile.placement.model import Decision, Plan, Shard
from pincompile.placement.plan import plan

__all__ = ["Decision", "Plan", "Shard", "plan"]
