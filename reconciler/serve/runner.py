"""What ``serve`` needs from the reconciler, and the one place that builds the real one."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol

from reconciler.clock import Clock

if TYPE_CHECKING:
    from pincompile.contract import Result
    from reconciler.engine import Flight


class PassRunner(Protocol):
    """Reconciles member clusters to one compile result, a pass at a time, as
    :class:`~reconciler.engine.Reconciler` does: :meth:`pass_of` runs a pass up to its
    writes and, on leaving, writes its statuses; never raises for a cluster's errors (they
    are in the report)."""

    def pass_of(self, result: Result) -> AbstractContextManager[Flight]: ...

    def settle(self, flight: Flight, timeout: float, clock: Clock) -> None:
        """Check the pass's health on ``clock`` until healthy or ``timeout`` has passed."""

    def close(self) -> None: ...


RunnerFactory = Callable[[frozenset[str] | None, Clock], PassRunner]
"""Builds a runner for some member clusters (``None``: every cluster of the result) that
keeps time by the process's clock."""


def reconciler_factory(kubeconfig: str | None, host_context: str, *,
                       failover_after: float = 300.0, failback_step: str = "25%"
                       ) -> RunnerFactory:
    """Runners backed by the long-running reconciler (its watch cache); a member's failure
    is timed by the process's clock."""
    from reconciler.engine import Reconciler

    def build(clusters: frozenset[str] | None, clock: Clock) -> PassRunner:
        runner: PassRunner = Reconciler(kubeconfig, host_context, clusters=clusters, watch=True,
                                        failover_after=failover_after,
                                        failback_step=failback_step, failover_clock=clock)
        return runner

    return build


def load_factory(spec: str) -> RunnerFactory:
    """``module:callable`` → the factory that callable returns (tests plug in fake runners)."""
    import importlib

    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise ValueError(f"--runner must look like module:callable, not '{spec}'")
    factory: RunnerFactory = getattr(importlib.import_module(module), attr)()
    return factory
