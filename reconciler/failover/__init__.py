"""Cluster failover: which member clusters are lost, and where their share of each app runs
meanwhile. :mod:`.decide` decides (pure); :mod:`.step` is the pass's step (reads the state
from the host's stored status, rewrites the members' desired objects, stores the state)."""

from reconciler.failover.decide import (
    CORDONED,
    DEFAULT_GRACE,
    DEFAULT_STEP,
    LOST,
    REACHABLE,
    RETURNING,
    STEPPED_KINDS,
    UNREACHABLE,
    AppMove,
    Arrangement,
    Capacity,
    ClusterState,
    arrange,
    blend,
    excluded,
    hold_capacity,
    observe,
    parse_step,
    step_of,
    with_floor,
)

__all__ = [
    "CORDONED", "DEFAULT_GRACE", "DEFAULT_STEP", "LOST", "REACHABLE", "RETURNING",
    "STEPPED_KINDS", "UNREACHABLE", "AppMove", "Arrangement", "Capacity", "ClusterState",
    "arrange", "blend", "excluded", "hold_capacity", "observe", "parse_step", "step_of",
    "with_floor",
]
