"""Forecasts: ``GET /api/v1/forecast`` (every project the caller may see, and the
clusters to whoever may list them) and ``GET /api/v1/projects/{project}/forecast``, from
the insight store's samples and the projects' quotas. Authorized before the store is read.
The store's SQL is imported by the first call (as the cost routes').
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request, Response
from fastapi.concurrency import run_in_threadpool

from pincompile.contract import duration_seconds
from reconciler.api.access import Caller, allowed
from reconciler.api.cost_routes import window
from reconciler.api.insight import CLUSTER_KIND, PREFIX, may_see_project
from reconciler.api.insight_models import ForecastReport
from reconciler.insight.forecasts import (
    cluster_forecasts,
    forecast_document,
    project_forecasts,
)
from reconciler.insight.live import InsightSource
from reconciler.model import Obj

if TYPE_CHECKING:
    from reconciler.store import Store

MAX_POINTS = 20_000
"""The most buckets a forecast fits (30 days of hours: 720)."""
MAX_HORIZON = 366 * 86400.0
BUCKET, HORIZON = "1h", "90d"
"""The defaults of ``bucket`` and ``horizon`` (the console's project page uses them)."""


def _seconds(text: str, what: str, low: float, high: float) -> float:
    try:
        value = duration_seconds(text)
    except (ValueError, KeyError):
        raise HTTPException(400, f"{what}: {text[:64]!r} is not a duration (1h, 90d)") from None
    if not low <= value <= high:
        raise HTTPException(400, f"{what}: between {low:g} s and {high / 86400:g} days")
    return value


def _report(store: Store, quotas: dict[str, Obj], projects: list[str], clusters: bool,
            since: float, until: float, bucket: float, horizon: float) -> dict[str, Any]:
    from reconciler.store.usage import cluster_series, series

    points = [p for project in projects for p in series(store, since, until, bucket, project)]
    return forecast_document(
        project_forecasts(points, quotas, horizon),
        cluster_forecasts(cluster_series(store, since, until, bucket), horizon)
        if clusters else None, since, until, bucket, horizon)


def forecast_of(store: Store, insight: InsightSource | None, projects: list[str],
                clusters: bool, since: float, until: float, bucket: float, horizon: float
                ) -> dict[str, Any]:
    """The forecast document of ``projects`` (and of every cluster when ``clusters``),
    each project's quota from ``insight``'s Projects (no source: no quota)."""
    quotas = {} if insight is None else {o["metadata"]["name"]: o for o in insight.projects()}
    return _report(store, quotas, projects, clusters, since, until, bucket, horizon)


def mount_forecast(api: FastAPI, caller_of: Callable[..., Awaitable[Caller]]) -> None:
    """The forecast routes, with ``caller_of`` authenticating each call."""
    router = APIRouter(dependencies=[Depends(caller_of)])
    Since = Query("30d", description="how far back the fit looks: a duration or a time")
    Bucket = Query(BUCKET, description="the series' step (a mean per step)")
    Horizon = Query(HORIZON, description="how far ahead it forecasts")

    async def answer(request: Request, project: str | None, since: str, bucket: str,
                     horizon: str) -> dict[str, Any]:
        from reconciler.store.usage import projects_in

        caller: Caller = request.state.caller
        if project is not None and not await may_see_project(request, caller, project):
            raise HTTPException(403, f"{caller.user} may not list apps in project {project}")
        start, end = window(since, None)
        step = _seconds(bucket, "bucket", 10.0, 7 * 86400.0)
        if (end - start) / step > MAX_POINTS:
            raise HTTPException(400, f"bucket: {(end - start) / step:.0f} steps; at most "
                                     f"{MAX_POINTS} (a longer bucket, or a later since)")
        ahead = _seconds(horizon, "horizon", step, MAX_HORIZON)
        gateway = request.app.state.gateway
        if project is None:
            found = await run_in_threadpool(projects_in, gateway.store, start, end)
            visible = [p for p in found if await may_see_project(request, caller, p)]
            clusters = await allowed(gateway.access, caller, "list", CLUSTER_KIND, "")
        else:
            visible, clusters = [project], False
        return await run_in_threadpool(forecast_of, gateway.store,
                                       getattr(gateway, "insight", None), visible, clusters,
                                       start, end, step, ahead)

    @router.get(f"{PREFIX}/forecast", response_model=ForecastReport,
                summary="Per project and tier, requested and used forecast, and when quota "
                        "(or, for whoever may list clusters, a cluster's capacity) runs out")
    async def every(request: Request, since: str = Since, bucket: str = Bucket,
                    horizon: str = Horizon) -> Response:
        return Response(json.dumps(await answer(request, None, since, bucket, horizon)),
                        media_type="application/json")

    @router.get(f"{PREFIX}/projects/{{project}}/forecast", response_model=ForecastReport,
                summary="One project's forecast per tier: requested and used, and when its "
                        "quota runs out")
    async def one(request: Request, project: str, since: str = Since, bucket: str = Bucket,
                  horizon: str = Horizon) -> Response:
        return Response(json.dumps(await answer(request, project, since, bucket, horizon)),
                        media_type="application/json")

    api.include_router(router)
