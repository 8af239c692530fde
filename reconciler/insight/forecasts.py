"""The forecast documents: per project, tier and resource what its pods request (against
the project's quota for the tier) and use; per cluster what its pods request (against
what its nodes allocate); each with its fitted model and the date it runs out
(:mod:`reconciler.insight.forecast`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pincompile.contract import parse_quantity
from reconciler.clock import iso_time
from reconciler.insight.forecast import DAY, Forecast, forecast
from reconciler.model import Obj
from reconciler.store.records import GIB, Point

RESOURCES = (("cpu", "cores", 1.0), ("memory", "GiB", GIB))
"""Resource, the unit it is forecast in, bytes (or cores) per unit."""


def _asked(point: Point, i: int) -> float:
    """The ``i``-th resource's request of a point (cpu, memory)."""
    return point[3] if i == 0 else point[4]


def _beside(point: Point, i: int) -> float | None:
    """The ``i``-th resource's use (projects) or allocatable (clusters) of a point."""
    return point[5] if i == 0 else point[6]


def _entry(found: Forecast | None, limit: float | None, **what: Any) -> dict[str, Any] | None:
    if found is None:
        return None
    run_out = found.run_out
    return {**what, "limit": limit, "last": round(found.fit.value(found.fit.last), 6),
            "model": found.fit.explain(),
            "runsOut": iso_time(run_out.at) if run_out and run_out.at is not None
            and not run_out.already else None,
            "overAlready": bool(run_out and run_out.already),
            "daily": [{"at": iso_time(t), "value": round(v, 6)} for t, v in found.daily]}


def quota_limit(project: Obj | None, tier: str, resource: str, per_unit: float
                ) -> float | None:
    """The Project's quota for ``tier`` and ``resource``, in forecast units; None when
    it lists none (a missing tier allows nothing: 0)."""
    if project is None:
        return None
    tiers = (project.get("spec") or {}).get("quota") or {}
    if tiers.get(tier) is None:
        return 0.0
    value = (tiers.get(tier) or {}).get(resource)
    try:
        return float(parse_quantity(str(value))) / per_unit if value is not None else 0.0
    except ValueError:
        return None


def project_forecasts(points: Iterable[Point], projects: Mapping[str, Obj],
                      horizon: float) -> list[dict[str, Any]]:
    """Per project (of ``points``), per tier and resource, requested and used."""
    grouped: dict[tuple[str, str], list[Point]] = {}
    for point in points:
        grouped.setdefault((point[1], point[2]), []).append(point)
    out: dict[str, list[dict[str, Any]]] = {}
    for (project, tier), rows in sorted(grouped.items()):
        for i, (resource, unit, per_unit) in enumerate(RESOURCES):
            limit = quota_limit(projects.get(project), tier, resource, per_unit)
            requested = [(r[0], _asked(r, i) / per_unit) for r in rows]
            used = [(r[0], value / per_unit) for r in rows
                    if (value := _beside(r, i)) is not None]
            for measure, series, bound in (("requested", requested, limit),
                                           ("used", used, None)):
                entry = _entry(forecast(series, bound, horizon), bound, tier=tier,
                               resource=resource, unit=unit, measure=measure)
                if entry is not None:
                    out.setdefault(project, []).append(entry)
    return [{"project": p, "series": series} for p, series in out.items()]


def cluster_forecasts(points: Iterable[Point], horizon: float) -> list[dict[str, Any]]:
    """Per cluster and resource, what its pods request against what its nodes allocate
    (the last allocatable seen)."""
    grouped: dict[str, list[Point]] = {}
    for point in points:
        grouped.setdefault(point[1], []).append(point)
    out = []
    for cluster, rows in sorted(grouped.items()):
        rows.sort()
        for i, (resource, unit, per_unit) in enumerate(RESOURCES):
            allocatable = _beside(rows[-1], i)
            limit = None if allocatable is None else allocatable / per_unit
            entry = _entry(forecast([(r[0], _asked(r, i) / per_unit) for r in rows], limit,
                                    horizon), limit, resource=resource, unit=unit)
            if entry is not None:
                out.append({"cluster": cluster, **entry})
    return out


def forecast_document(projects: list[dict[str, Any]], clusters: list[dict[str, Any]] | None,
                      since: float, until: float, bucket: float, horizon: float
                      ) -> dict[str, Any]:
    return {"since": iso_time(since), "until": iso_time(until), "bucketSeconds": bucket,
            "horizonDays": round(horizon / DAY, 3),
            "model": "least squares: a straight-line trend plus the mean of each hour of the "
                     "week (two weeks of data or more) or of the day (two days or more)",
            "projects": projects, "clusters": clusters}
