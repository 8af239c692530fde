"""The console's SLO page (``/slos``): each SLO's value, budget left and burn rates, and
per member cluster the canary's last probes and their launch latencies as a chart. Who
may read ``/api/v1/slos`` may read it (the same non-resource URL check); anyone else gets
a 403 page."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.concurrency import run_in_threadpool

from reconciler.console.respond import problem_page, render_page, signed_in
from reconciler.slo.chart import HOURS, probe_chart
from reconciler.slo.serving import SLOService
from reconciler.store import verification as kept

LAST_PROBES = 5


def add_slo_page(app: FastAPI) -> None:
    app.add_api_route("/slos", slo_page, methods=["GET"], include_in_schema=False)


async def slo_page(request: Request) -> Response:
    who = await signed_in(request)
    if isinstance(who, Response):
        return who
    gateway = request.app.state.gateway
    if not await run_in_threadpool(gateway.access.may, who, "get", "/api/v1/slos"):
        return await problem_page(request, who, 403, f"{who.user} may not read the SLOs "
                                  "(get on the non-resource URL /api/v1/slos)")
    service: SLOService | None = getattr(request.app.state, "slo", None)
    if service is None or service.store is None:
        return await problem_page(request, who, 503, "this server keeps no SLIs (no insight "
                                  "store)")
    page = await run_in_threadpool(_page, service)
    return await render_page(request, "slos.html", who, **page)


def _page(service: SLOService) -> dict[str, Any]:
    now = datetime.now(UTC)
    assert service.store is not None
    probes = kept.probes(service.store, since=now - timedelta(hours=HOURS))
    clusters = sorted({p.cluster for p in probes})
    return {"slos": [s.document() for s in service.states()],
            "charts": [c for c in (probe_chart(name, probes, now) for name in clusters) if c],
            "recent": {name: [p for p in probes if p.cluster == name][-LAST_PROBES:][::-1]
                       for name in clusters},
            "note": service.canary.note, "scheduled": service.scheduled, "hours": HOURS}
