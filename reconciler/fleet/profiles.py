"""Timer profiles of a fleet: Kubernetes' own defaults, or short timers for tests.

``default`` leaves every controller timer as Kubernetes ships it (``make demo`` runs it).
``test`` shortens the timers tests would otherwise wait for — the node controller's grace
period, the HPA's sync period and downscale window, the tolerations behind taint-based
eviction — and shortens kwok's node Leases to match, so
nodes stay Ready under the shorter grace period (renewals come a quarter of the Lease
duration apart: 4 renewals per Lease, about 5 per grace period).

A fleet is started with one profile (``fleet up --profile``, ``PINCOMPILE_FLEET_PROFILE``)
and records it in its state.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

#: environment variable that picks the profile when none is given
ENV = "PINCOMPILE_FLEET_PROFILE"
DEFAULT = "default"
TEST = "test"


@dataclass(frozen=True)
class Profile:
    """The timers of one profile; None leaves Kubernetes' default."""

    name: str
    #: kwok's node Lease duration (``--node-lease-duration-seconds``); renewed every quarter
    node_lease_seconds: int
    #: node controller: NotReady this long after a node's last Lease renewal (default 50)
    node_grace_seconds: int | None = None
    #: node controller: how often it checks the nodes (default 5)
    node_monitor_period_seconds: int | None = None
    #: HPA controller: how often it syncs (default 15)
    hpa_sync_seconds: int | None = None
    #: HPA controller: downscale window of an HPA that sets none itself (default 300)
    hpa_downscale_seconds: int | None = None
    #: how long a pod tolerates its node being NotReady or unreachable before taint-based
    #: eviction (the API server's default tolerations; default 300)
    eviction_seconds: int | None = None

    def controller_manager_flags(self) -> list[str]:
        flags = {"--node-monitor-grace-period": self.node_grace_seconds,
                 "--node-monitor-period": self.node_monitor_period_seconds,
                 "--horizontal-pod-autoscaler-sync-period": self.hpa_sync_seconds,
                 "--horizontal-pod-autoscaler-downscale-stabilization":
                     self.hpa_downscale_seconds}
        return [f"{flag}={value}s" for flag, value in flags.items() if value is not None]

    def apiserver_flags(self) -> list[str]:
        if self.eviction_seconds is None:
            return []
        return [f"--default-not-ready-toleration-seconds={self.eviction_seconds}",
                f"--default-unreachable-toleration-seconds={self.eviction_seconds}"]

    def describe(self) -> str:
        """One line: what the profile changes."""
        if not self.controller_manager_flags() and not self.apiserver_flags():
            return f"{self.name}: Kubernetes' default timers"
        return (f"{self.name}: node grace {self.node_grace_seconds}s (Leases "
                f"{self.node_lease_seconds}s), HPA sync {self.hpa_sync_seconds}s and "
                f"downscale window {self.hpa_downscale_seconds}s, eviction after "
                f"{self.eviction_seconds}s")


PROFILES: dict[str, Profile] = {
    DEFAULT: Profile(DEFAULT, node_lease_seconds=40),
    TEST: Profile(TEST, node_lease_seconds=12, node_grace_seconds=20,
                  node_monitor_period_seconds=2, hpa_sync_seconds=5,
                  hpa_downscale_seconds=30, eviction_seconds=30),
}
NAMES = tuple(PROFILES)


def profile(name: str | None = None) -> Profile:
    """The profile called ``name``; without one, ``$PINCOMPILE_FLEET_PROFILE`` or
    ``default``. Raises ValueError for an unknown name."""
    chosen = name or os.environ.get(ENV) or DEFAULT
    try:
        return PROFILES[chosen]
    except KeyError:
        source = "" if name else f" (from ${ENV})"
        raise ValueError(f"unknown fleet profile {chosen!r}{source}; one of: "
                         f"{', '.join(NAMES)}") from None
