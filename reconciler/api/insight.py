"""Project and cluster insight: ``GET /api/v1/projects``, ``/projects/{project}`` and
``/clusters``.

A project is visible to whoever may ``list`` one of its app kinds (the apps' own rule: a
tenant sees its projects); the clusters to whoever may ``list`` the host's
``clusters.pincompute.io``. Each call is authorized before anything is read or summed.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request, Response
from fastapi.concurrency import run_in_threadpool
from starlette.requests import HTTPConnection

from reconciler.api.access import Caller, allowed
from reconciler.api.insight_models import ClusterList, ProjectInsight, ProjectList
from reconciler.api.models import Problem
from reconciler.insight.live import InsightSource
from reconciler.insight.views import cluster_view, project_view
from reconciler.model import Obj
from reconciler.status.document import APP_KINDS

PREFIX = "/api/v1"
CLUSTER_KIND = "Cluster"


def source_of(request: HTTPConnection) -> InsightSource:
    gateway = request.app.state.gateway
    insight: InsightSource | None = getattr(gateway, "insight", None)
    if insight is None:
        raise HTTPException(503, "this server reads no member clusters")
    return insight


async def may_see_project(request: HTTPConnection, caller: Caller, project: str) -> bool:
    """Whether ``caller`` may list any app kind in ``project`` (the kinds asked in turn:
    a tenant who may list PinApps is answered with one review)."""
    access = request.app.state.gateway.access
    for kind in sorted(APP_KINDS):
        if await allowed(access, caller, "list", kind, project):
            return True
    return False


def _json(document: dict[str, Any]) -> Response:
    return Response(json.dumps(document), media_type="application/json")


def mount_insight(api: FastAPI, caller_of: Callable[..., Awaitable[Caller]]) -> None:
    """The insight routes, with ``caller_of`` authenticating each call."""
    router = APIRouter(dependencies=[Depends(caller_of)])

    @router.get(f"{PREFIX}/projects", response_model=ProjectList,
                summary="The projects the caller may see: quota per tier, requested and used")
    async def projects(request: Request) -> Response:
        caller: Caller = request.state.caller
        source = source_of(request)
        crs = await run_in_threadpool(source.projects)
        visible = [cr for cr in crs if await may_see_project(request, caller, _name(cr))]
        return _json({"items": await run_in_threadpool(_projects, source, visible)})

    @router.get(f"{PREFIX}/projects/{{project}}", response_model=ProjectInsight,
                responses={404: {"model": Problem}},
                summary="One project: quota per tier, requested and used, per cluster")
    async def project(request: Request, project: str) -> Response:
        caller: Caller = request.state.caller
        if not await may_see_project(request, caller, project):
            raise HTTPException(403, f"{caller.user} may not list apps in project {project}")
        source = source_of(request)
        found = [cr for cr in await run_in_threadpool(source.projects) if _name(cr) == project]
        if not found:
            raise HTTPException(404, f"no project {project}")
        return _json((await run_in_threadpool(_projects, source, found))[0])

    @router.get(f"{PREFIX}/clusters", response_model=ClusterList,
                summary="Member clusters: capacity, allocatable, requested and used per node "
                        "pool and tier, failover state, nodes")
    async def clusters(request: Request) -> Response:
        caller: Caller = request.state.caller
        access = request.app.state.gateway.access
        if not await allowed(access, caller, "list", CLUSTER_KIND, ""):
            raise HTTPException(403, f"{caller.user} may not list clusters.pincompute.io")
        source = source_of(request)
        return _json({"items": await run_in_threadpool(cluster_views, source)})

    api.include_router(router)


def _name(cr: Obj) -> str:
    return str((cr.get("metadata") or {}).get("name") or "")


def _projects(source: InsightSource, crs: list[Obj]) -> list[dict[str, Any]]:
    if not crs:
        return []
    readings = source.readings(_name(c) for c in source.clusters())
    return [project_view(cr, readings) for cr in crs]


def cluster_views(source: InsightSource) -> list[dict[str, Any]]:
    """Every member cluster as ``/clusters`` gives it (the console's member panel too)."""
    crs = source.clusters()
    readings = source.readings(_name(c) for c in crs)
    return [cluster_view(cr, readings.get(_name(cr))) for cr in crs]
