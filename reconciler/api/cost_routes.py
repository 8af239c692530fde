"""Cost: ``GET /api/v1/cost`` (every project the caller may see) and
``GET /api/v1/projects/{project}/cost``, from the insight store's samples.

A project's cost is visible to whoever may see the project (list one of its app kinds);
the idle capacity of every cluster to whoever may list clusters, else of the clusters the
caller's projects ran in. Each call is authorized before the store is summed.

The store's SQL (:mod:`reconciler.store.usage`, SQLAlchemy) is imported by the first call:
the API served in a one-shot command never loads it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request, Response
from fastapi.concurrency import run_in_threadpool

from pincompile.contract import duration_seconds
from reconciler.api.access import Caller, allowed
from reconciler.api.insight import CLUSTER_KIND, PREFIX, may_see_project
from reconciler.api.insight_models import CostReport, ProjectCost
from reconciler.clock import parse_time
from reconciler.insight.cost import MAX_WINDOW, cost_document

if TYPE_CHECKING:
    from reconciler.store import Store

SINCE_HELP = ("how far back: a duration (30d, 12h) or an RFC 3339 time; at most "
              f"{MAX_WINDOW / 86400:.0f} days")


def window(since: str, until: str | None, now: float | None = None) -> tuple[float, float]:
    """``[since, until)`` in epoch seconds: each a time, or a duration before ``until``
    (``until``'s before now); HTTPException 400 when either cannot be read."""
    now = time.time() if now is None else now

    def moment(text: str, what: str, before: float) -> float:
        stamp = parse_time(text)
        if stamp is not None:
            return stamp
        try:
            return before - duration_seconds(text)
        except (ValueError, KeyError):
            raise HTTPException(400, f"{what}: {text[:64]!r} is neither a duration (30d, "
                                     "12h) nor an RFC 3339 time") from None

    end = moment(until, "until", now) if until else now
    start = moment(since, "since", end)
    if not start < end:
        raise HTTPException(400, "since must be before until")
    return max(start, end - MAX_WINDOW), end


def _report(store: Store, projects: list[str], every_cluster: bool, since: float,
            until: float) -> dict[str, Any]:
    """The projects' costs; the idle capacity of every cluster, or of those they ran in."""
    from reconciler.store.usage import app_costs, cluster_costs, clusters_in

    costs = {p: app_costs(store, since, until, p) for p in projects}
    idle = cluster_costs(store, since, until)
    if not every_cluster:
        ran = set(clusters_in(store, since, until, projects))
        idle = [c for c in idle if c.cluster in ran]
    return cost_document(costs, idle, since, until)


def project_document(store: Store, project: str, since: float, until: float) -> dict[str, Any]:
    """One project's cost document (``/projects/{project}/cost``; the console's project
    page): its cost per tier and app, and the idle capacity of the clusters it ran in."""
    document = _report(store, [project], False, since, until)
    entries = document.pop("projects")
    empty = {"project": project, "cost": 0.0, "byTier": {}, "apps": []}
    return {**document, **(entries[0] if entries else empty)}


def mount_cost(api: FastAPI, caller_of: Callable[..., Awaitable[Caller]]) -> None:
    """The cost routes, with ``caller_of`` authenticating each call."""
    router = APIRouter(dependencies=[Depends(caller_of)])

    @router.get(f"{PREFIX}/cost", response_model=CostReport,
                summary="Cost per project, tier and app the caller may see, and the "
                        "clusters' idle capacity")
    async def cost(request: Request, since: str = "30d", until: str | None = None
                   ) -> Response:
        from reconciler.store.usage import projects_in

        caller: Caller = request.state.caller
        start, end = window(since, until)
        gateway = request.app.state.gateway
        found = await run_in_threadpool(projects_in, gateway.store, start, end)
        visible = [p for p in found if await may_see_project(request, caller, p)]
        every = await allowed(gateway.access, caller, "list", CLUSTER_KIND, "")
        document = await run_in_threadpool(_report, gateway.store, visible, every, start, end)
        return Response(json.dumps(document), media_type="application/json")

    @router.get(f"{PREFIX}/projects/{{project}}/cost", response_model=ProjectCost,
                summary="One project's cost per tier and app, and the idle capacity of "
                        "the clusters it ran in")
    async def project_cost(request: Request, project: str, since: str = "30d",
                           until: str | None = None) -> Response:
        caller: Caller = request.state.caller
        if not await may_see_project(request, caller, project):
            raise HTTPException(403, f"{caller.user} may not list apps in project {project}")
        start, end = window(since, until)
        document = await run_in_threadpool(project_document, request.app.state.gateway.store,
                                           project, start, end)
        return Response(json.dumps(document), media_type="application/json")

    api.include_router(router)
