"""What ``serve`` needs from the reconciler, and the one place that builds the real one."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from reconciler.model import PassReport

if TYPE_CHECKING:
    from pincompile.contract import Result


class PassRunner(Protocol):
    """Reconciles member clusters to one compile result (one pass); never raises for a
    cluster's errors (they are in the report)."""

    def run(self, result: Result) -> PassReport: ...

    def close(self) -> None: ...


RunnerFactory = Callable[[frozenset[str] | None], PassRunner]
"""Builds a runner for some member clusters (``None``: every cluster of the result)."""


def reconciler_factory(kubeconfig: str | None, host_context: str, *,
                       failover_after: float = 300.0, failback_step: str = "25%"
                       ) -> RunnerFactory:
    """Runners backed by the long-running reconciler (its watch cache)."""
    from reconciler.engine import Reconciler

    def build(clusters: frozenset[str] | None) -> PassRunner:
        runner: PassRunner = Reconciler(kubeconfig, host_context, clusters=clusters, watch=True,
                                        failover_after=failover_after,
                                        failback_step=failback_step)
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
