"""One project's page, ``/projects/PROJECT``: what it cost per tier and app over a window
(``?since=``, 30 days by default: the document of ``GET /api/v1/projects/{project}/cost``),
how much of what it requested it used (efficiency), the idle capacity of the clusters it
ran in, and per tier when its requests would cross its quota at their trend (the
document of ``/api/v1/projects/{project}/forecast``, hourly means, 90 days ahead). Who may
see the project in the API (list one of its app kinds) may see the page; anyone else gets
a 403 page before the store is read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from fastapi import HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from starlette.responses import Response

from pincompile.contract import duration_seconds
from reconciler.api.app import Gateway
from reconciler.api.cost_routes import project_document, window
from reconciler.api.forecast_routes import BUCKET, HORIZON, forecast_of
from reconciler.api.insight import may_see_project
from reconciler.api.insight_models import AppCost, ForecastReport, ProjectCost
from reconciler.commands.capacity_forecast import forecast_rows, heading
from reconciler.console.respond import gateway_of, problem_page, render_page, signed_in
from reconciler.insight.cost import money, share

SINCE = "30d"
SINCE_MAX = 64
"""Characters of ``?since=`` read (a duration or an RFC 3339 time is shorter)."""
APPS_SHOWN = 200
"""The costliest apps listed; the page says how many more there are."""


def app_path(app: str) -> str:
    """An app's page from ``KIND/PROJECT/NAME``, each part quoted (names come from
    tenants)."""
    return "/apps/" + "/".join(quote(part, safe="") for part in app.split("/", 2))


@dataclass(frozen=True)
class AppRow:
    app: str
    path: str
    tier: str
    cost: str
    cpu: str
    """CPU efficiency: used over requested."""
    memory: str
    core_hours: str
    gib_hours: str


@dataclass
class ProjectPage:
    """What the page shows, as text: the cost, its split, the forecast's table."""

    project: str
    since: str
    until: str
    currency: str
    cost: str
    efficiency: tuple[str, str]
    """CPU and memory: used over requested."""
    hours: tuple[str, str]
    """Core-hours and GiB-hours requested."""
    tiers: list[tuple[str, str]]
    apps: list[AppRow]
    more_apps: int
    idle: list[tuple[str, str, str, str]]
    """Cluster, capacity cost, idle cost, idle share."""
    unpriced: bool
    forecast_note: str
    forecast: list[list[str]] = field(default_factory=list)
    """Header first: tier, resource, measure, now, trend, seasonality, quota, runs out."""


def _app_row(a: AppCost) -> AppRow:
    return AppRow(app=a.app, path=app_path(a.app), tier=a.tier, cost=money(a.cost),
                  cpu=share(a.efficiency.cpu), memory=share(a.efficiency.memory),
                  core_hours=f"{a.requested.cpuCoreHours:,.2f}",
                  gib_hours=f"{a.requested.memoryGiBHours:,.2f}")


def project_page(cost_document: dict[str, Any], forecast_document: dict[str, Any]
                 ) -> ProjectPage:
    """The page of one project from its cost and forecast documents (the API's)."""
    cost = ProjectCost.model_validate(cost_document)
    forecast = ForecastReport.model_validate(forecast_document)
    efficiency = cost.efficiency
    hours = cost.requested
    rows = forecast_rows(forecast)
    return ProjectPage(
        project=cost.project, since=cost.since, until=cost.until, currency=cost.currency,
        cost=money(cost.cost),
        efficiency=(share(efficiency.cpu), share(efficiency.memory)) if efficiency
        else ("-", "-"),
        hours=(f"{hours.cpuCoreHours:,.2f}", f"{hours.memoryGiBHours:,.2f}") if hours
        else ("-", "-"),
        tiers=[(tier, money(value)) for tier, value in cost.byTier.items()],
        apps=[_app_row(a) for a in cost.apps[:APPS_SHOWN]],
        more_apps=max(0, len(cost.apps) - APPS_SHOWN),
        idle=[(i.cluster, money(i.capacityCost), money(i.idleCost), share(i.idleShare))
              for i in cost.idle],
        unpriced=cost.unpricedHours > 0, forecast_note=heading(forecast),
        forecast=[row[1:] for row in rows] if len(rows) > 1 else [])


def _documents(gateway: Gateway, project: str, start: float, end: float
               ) -> tuple[dict[str, Any], dict[str, Any]]:
    cost = project_document(gateway.store, project, start, end)
    forecast = forecast_of(gateway.store, gateway.insight, [project], False, start, end,
                           duration_seconds(BUCKET), duration_seconds(HORIZON))
    return cost, forecast


async def project_view(request: Request, project: str) -> Response:
    who = await signed_in(request)
    if isinstance(who, Response):
        return who
    if not await may_see_project(request, who, project):
        return await problem_page(request, who, 403, f"{who.user} may not list apps in "
                                                     f"project {project}")
    since = request.query_params.get("since", SINCE).strip()[:SINCE_MAX] or SINCE
    try:
        start, end = window(since, None)
    except HTTPException as exc:
        return await problem_page(request, who, 400, str(exc.detail))
    documents = await run_in_threadpool(_documents, gateway_of(request), project, start, end)
    return await render_page(request, "project.html", who, page=project_page(*documents),
                             asked=since)
