"""Cost per project, tier and app over a window, from the store's samples (OpenCost's
allocation rule): each pod is charged the larger of what it requests and what it uses,
times its tier's hourly price in its cluster; efficiency is what the pods used over what
they requested while usage was measured; a cluster's idle capacity (allocatable that no
pod is charged for) is reported apart, never spread over the projects."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from reconciler.clock import iso_time
from reconciler.store.records import GIB, AppCost, ClusterCost

MAX_WINDOW = 400 * 86400.0
"""The longest window a report covers (the store keeps less by default)."""


def _money(value: float) -> float:
    """Ten significant digits: cents of millions, and the fractions of a cent a short
    window costs."""
    return float(f"{value:.10g}")


def _ratio(used: float, requested: float) -> float | None:
    return round(used / requested, 4) if requested > 0 else None


def _hours(cpu: float, memory: float, gpu: float | None = None) -> dict[str, float]:
    out = {"cpuCoreHours": round(cpu, 6), "memoryGiBHours": round(memory / GIB, 6)}
    if gpu is not None:
        out["gpuHours"] = round(gpu, 6)
    return out


def app_entry(cost: AppCost) -> dict[str, Any]:
    cpu, memory, gpu = cost.cost_by_resource
    return {"app": "/".join(cost.app), "tier": cost.tier, "cost": _money(cost.cost),
            "costByResource": {"cpu": _money(cpu), "memory": _money(memory),
                               "nvidia.com/gpu": _money(gpu)},
            "requested": _hours(*cost.requested_hours),
            "used": _hours(*cost.used_hours),
            "efficiency": {"cpu": _ratio(cost.used_hours[0], cost.measured_hours[0]),
                           "memory": _ratio(cost.used_hours[1], cost.measured_hours[1])},
            "unpricedHours": round(cost.unpriced_hours, 6)}


def project_entry(project: str, costs: list[AppCost]) -> dict[str, Any]:
    """One project: its cost in total and per tier, its efficiency, every app."""
    by_tier: dict[str, float] = {}
    for c in costs:
        by_tier[c.tier] = by_tier.get(c.tier, 0.0) + c.cost
    measured = [sum(c.measured_hours[i] for c in costs) for i in (0, 1)]
    used = [sum(c.used_hours[i] for c in costs) for i in (0, 1)]
    requested = [sum(c.requested_hours[i] for c in costs) for i in (0, 1, 2)]
    return {"project": project, "cost": _money(sum(c.cost for c in costs)),
            "byTier": {t: _money(v) for t, v in sorted(by_tier.items())},
            "requested": _hours(*requested), "used": _hours(*used),
            "efficiency": {"cpu": _ratio(used[0], measured[0]),
                           "memory": _ratio(used[1], measured[1])},
            "unpricedHours": round(sum(c.unpriced_hours for c in costs), 6),
            "apps": [app_entry(c) for c in sorted(costs, key=lambda c: (-c.cost, c.app))]}


def idle_entry(cost: ClusterCost) -> dict[str, Any]:
    return {"cluster": cost.cluster, "capacityCost": _money(cost.capacity_cost),
            "idleCost": _money(cost.idle_cost),
            "idleShare": _ratio(cost.idle_cost, cost.capacity_cost),
            "unpricedHours": round(cost.unpriced_hours, 6)}


def currency_of(costs: Iterable[AppCost | ClusterCost]) -> str:
    found = {c.currency for c in costs if c.currency}
    return found.pop() if len(found) == 1 else ("mixed" if found else "")


def money(value: float) -> str:
    """A cost for people: cents from 1 up, four decimals below (a short window's cost)."""
    return f"{value:,.2f}" if abs(value) >= 1 else f"{value:.4f}"


def share(value: float | None) -> str:
    """A ratio (efficiency, idle share) as a whole percentage; ``-`` when not known."""
    return "-" if value is None else f"{value:.0%}"


def cost_document(projects: dict[str, list[AppCost]], idle: list[ClusterCost],
                  since: float, until: float) -> dict[str, Any]:
    """The report: per project (largest first) its cost and apps; per cluster its idle
    capacity's cost and share."""
    every = [c for costs in projects.values() for c in costs]
    entries = [project_entry(p, costs) for p, costs in projects.items()]
    return {"since": iso_time(since), "until": iso_time(until),
            "currency": currency_of([*every, *idle]),
            "projects": sorted(entries, key=lambda e: (-e["cost"], e["project"])),
            "idle": [idle_entry(c) for c in idle]}
