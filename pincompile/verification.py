"""The platform's verification settings in ``pincompile.yaml``: the canary's policy
(``canary:``) and the service level objectives (``slos:``), validated with located errors.

``canary`` names the platform project the probes run in (its quota, its folder), how often
and for how long they run, and in which clusters and tiers. ``slos`` declares objectives
over the SLIs ``serve`` measures; without it the platform's default objectives apply
(:data:`DEFAULT_SLOS`). Latency objectives are "this share of events within a threshold",
the threshold one of the SLI's histogram buckets (:data:`LATENCY_BUCKETS`), so the command
line, the API and Prometheus compute the same number.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError, model_validator

from pincompile.diagnostics import Diagnostic
from pincompile.models.base import Strict, Tier
from pincompile.models.types import (
    Duration,
    Image,
    Name,
    Quantity,
    duration_seconds,
    located_error,
)

SLI = Literal["api-availability", "launch-latency", "reconcile-latency", "push-to-applied"]
SLIS: tuple[str, ...] = ("api-availability", "launch-latency", "reconcile-latency",
                         "push-to-applied")
LATENCY_SLIS = frozenset({"launch-latency", "reconcile-latency", "push-to-applied"})
RouteGroup = Literal["workload", "debugging", "insight"]
ROUTE_GROUPS: tuple[str, ...] = ("workload", "debugging", "insight")
#: Histogram buckets (seconds) of the launch and reconcile SLIs: a threshold is one of them.
LATENCY_BUCKETS: tuple[float, ...] = (1, 2.5, 5, 10, 15, 20, 25, 30, 45, 60, 90, 120, 180,
                                      300, 600)
#: The same for push → applied (``pincompile_serve_push_to_applied_seconds``).
PUSH_BUCKETS: tuple[float, ...] = (0.5, 1, 2, 3, 5, 10, 30, 60, 120, 300)
MIN_INTERVAL = 10.0
MIN_WINDOW = 3600.0


def buckets_of(sli: str) -> tuple[float, ...]:
    """The histogram buckets a threshold of ``sli`` must be one of."""
    return PUSH_BUCKETS if sli == "push-to-applied" else LATENCY_BUCKETS


class CanaryPolicy(Strict):
    """What the canary probes, how often, and with what."""

    project: Name
    """The platform project the probes run in: its namespace, quota and tiers."""
    interval: Duration = "5m"
    """A round of probes starts this often (at least 10s)."""
    timeout: Duration = "2m"
    """A probe that has not passed within this is failed (at most the interval)."""
    tiers: list[Tier] = Field(default_factory=lambda: list[Tier](["reserved"]), min_length=1)
    clusters: list[Name] = Field(default_factory=list)
    """Member clusters to probe; empty: every member cluster."""
    replicas: int = Field(default=1, ge=1, le=5)
    image: Image = "registry.k8s.io/e2e-test-images/busybox:1.36.1-1"
    """Needs ``sh``, ``echo`` and ``sleep`` (the probe's command, and the exec check)."""
    cpu: Quantity = "10m"
    memory: Quantity = "16Mi"

    @model_validator(mode="after")
    def _bounds(self) -> CanaryPolicy:
        if duration_seconds(self.interval) < MIN_INTERVAL:
            raise located_error(f"interval {self.interval} is under 10s", "interval")
        if duration_seconds(self.timeout) > duration_seconds(self.interval):
            raise located_error(f"timeout {self.timeout} is longer than the interval "
                                f"{self.interval}: one probe per cluster at a time",
                                "timeout")
        if duration_seconds(self.timeout) < 5:
            raise located_error(f"timeout {self.timeout} is under 5s", "timeout")
        return self

    @property
    def interval_seconds(self) -> float:
        return duration_seconds(self.interval)

    @property
    def timeout_seconds(self) -> float:
        return duration_seconds(self.timeout)


class Objective(Strict):
    """One service level objective: ``objective`` percent of the SLI's events are good
    over ``window``."""

    name: Name
    sli: SLI
    objective: float = Field(gt=0, lt=100)
    """Percent of good events, e.g. 99.9."""
    window: Duration = "30d"
    threshold: Duration | None = None
    """Latency SLIs: an event is good within this (one of the SLI's histogram buckets)."""
    tier: Tier = "reserved"
    """launch-latency: the tier whose launches count."""
    routes: list[RouteGroup] = Field(
        default_factory=lambda: list[RouteGroup](["workload", "debugging", "insight"]))
    """api-availability: the API's route groups that count."""
    description: str = Field(default="", max_length=200)

    @model_validator(mode="after")
    def _threshold(self) -> Objective:
        if duration_seconds(self.window) < MIN_WINDOW:
            raise located_error(f"window {self.window} is under 1h", "window")
        if self.sli not in LATENCY_SLIS:
            if self.threshold is not None:
                raise located_error(f"{self.sli} has no threshold (it counts errors)",
                                    "threshold")
            return self
        buckets = buckets_of(self.sli)
        if self.threshold is None:
            raise located_error(f"{self.sli} needs a threshold, one of "
                                f"{_seconds_list(buckets)}", "threshold")
        if float(duration_seconds(self.threshold)) not in buckets:
            raise located_error(f"threshold {self.threshold} is not a bucket of the "
                                f"{self.sli} histogram; one of {_seconds_list(buckets)}",
                                "threshold")
        return self

    @property
    def threshold_seconds(self) -> float | None:
        return None if self.threshold is None else float(duration_seconds(self.threshold))

    @property
    def window_seconds(self) -> float:
        return duration_seconds(self.window)

    @property
    def budget(self) -> float:
        """The error budget: the share of events that may be bad."""
        return 1.0 - self.objective / 100.0


DEFAULT_SLOS: tuple[Objective, ...] = (
    Objective(name="api-availability", sli="api-availability", objective=99.9,
              window="30d", description="PinCompute API calls answered without a 5xx"),
    Objective(name="reserved-launch-latency", sli="launch-latency", objective=99.0,
              window="30d", threshold="25s", tier="reserved",
              description="reserved-tier launches with every pod Ready within 25s (P99)"),
    Objective(name="reconcile-latency", sli="reconcile-latency", objective=99.0,
              window="30d", threshold="30s",
              description="reconcile passes per member cluster within 30s (P99)"),
)


class Verification(Strict):
    """The ``canary`` and ``slos`` settings of ``pincompile.yaml`` (other keys are
    :mod:`pincompile.repoconfig`'s)."""

    model_config = ConfigDict(extra="ignore")
    canary: CanaryPolicy | None = None
    slos: list[Objective] | None = Field(default=None, max_length=50)

    @model_validator(mode="after")
    def _unique(self) -> Verification:
        names = [o.name for o in self.slos or ()]
        for index, name in enumerate(names):
            if name in names[:index]:
                raise located_error(f"two SLOs are named '{name}'", "slos", index, "name")
        return self

    @property
    def objectives(self) -> tuple[Objective, ...]:
        """The declared objectives, or the defaults when none are declared."""
        return DEFAULT_SLOS if self.slos is None else tuple(self.slos)


NONE = Verification()


def _seconds_list(buckets: tuple[float, ...]) -> str:
    return ", ".join(f"{b:g}s" for b in buckets)


def read_verification(doc: Any) -> tuple[Verification, list[Diagnostic]]:
    """The settings of ``pincompile.yaml``'s loaded document ``doc`` and their problems,
    located (:data:`NONE` when there are problems)."""
    from pincompile.parse import BY_ALIAS_ONLY, located_errors

    data = doc.data
    if not isinstance(data, Mapping) or not ({"canary", "slos"} & set(data)):
        return NONE, []
    try:
        return Verification.model_validate(
            {k: data[k] for k in ("canary", "slos") if k in data}, **BY_ALIAS_ONLY), []
    except ValidationError as exc:
        return NONE, list(located_errors(doc, Verification, exc.errors(include_url=False)))
