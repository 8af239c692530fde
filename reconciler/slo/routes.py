"""The API's SLO and canary routes (docs/api): every call authenticated as any API call,
then authorized as a non-resource URL on the host (``get /api/v1/slos``, ``get
/api/v1/canary``, ``post /api/v1/verify``: ``contrib/api/rbac-platform.yaml``) before
anything is read or run.

=============================  ======  ===============================================
path                           method  answer
=============================  ======  ===============================================
``/api/v1/slos``               GET     each SLO: value, budget left, burn rates, parts
``/api/v1/canary``             GET     the canary's policy, its last note, the probes
                                       of the last ``hours`` (per cluster with
                                       ``cluster=``)
``/api/v1/verify``             POST    the canary's probes run once now (``cluster=``
                                       to narrow); 200 with ``ok`` false when one failed
=============================  ======  ===============================================
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from starlette.requests import HTTPConnection

from pincompile.contract import verification
from reconciler.api.access import Caller
from reconciler.canary.schedule import NoPolicy

if TYPE_CHECKING:  # serve's, with the store's SQL: not imported for the routes alone
    from reconciler.slo.serving import SLOService

PREFIX = "/api/v1"
MAX_CLUSTERS = 100
_VERIFYING = threading.BoundedSemaphore(1)


def mount_slo_routes(api: FastAPI,
                     caller_of: Callable[[HTTPConnection], Awaitable[Caller]]) -> None:
    """Add the routes to the API's app; they read ``app.state.slo`` (None: 503)."""
    router = APIRouter(dependencies=[Depends(caller_of)])

    @router.get(f"{PREFIX}/slos", summary="Each SLO's value, error budget left and burn rates")
    async def slos(request: Request) -> dict[str, Any]:
        service = await _authorized(request, "get", f"{PREFIX}/slos")
        states = await run_in_threadpool(service.states)
        return {"evaluated": _now(), "slos": [s.document() for s in states]}

    @router.get(f"{PREFIX}/canary", summary="The canary's policy and its recent probes")
    async def canary(request: Request, cluster: str | None = None,
                     hours: Annotated[float, Query(gt=0, le=24 * 30)] = 6) -> dict[str, Any]:
        service = await _authorized(request, "get", f"{PREFIX}/canary")
        return await run_in_threadpool(canary_document, service, cluster, hours)

    @router.post(f"{PREFIX}/verify", summary="Run the canary's probes once now")
    async def verify(request: Request,
                     cluster: Annotated[list[str] | None, Query()] = None) -> dict[str, Any]:
        service = await _authorized(request, "post", f"{PREFIX}/verify")
        clusters = cluster or []
        if len(clusters) > MAX_CLUSTERS or any(len(c) > 253 for c in clusters):
            raise HTTPException(422, f"cluster: at most {MAX_CLUSTERS} names of 253 "
                                     "characters")
        if not _VERIFYING.acquire(blocking=False):
            raise HTTPException(429, "a verification runs already on this server",
                                headers={"Retry-After": "10"})
        try:
            results = await run_in_threadpool(service.canary.verify, clusters)
        except NoPolicy as exc:
            raise HTTPException(503, str(exc)) from None
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        finally:
            _VERIFYING.release()
        return {"ok": bool(results) and all(r.ok for r in results),
                "probes": [r.document() for r in results]}

    api.include_router(router)


async def _authorized(request: Request, verb: str, path: str) -> SLOService:
    """The SLO service once the host allows the caller ``verb`` on ``path`` (403, 503
    otherwise)."""
    gateway = request.app.state.gateway
    caller: Caller = request.state.caller
    if not await run_in_threadpool(gateway.access.may, caller, verb, path):
        raise HTTPException(403, f"{caller.user} may not {verb} {path} (a ClusterRole rule "
                                 "with nonResourceURLs grants it)")
    service: SLOService | None = getattr(request.app.state, "slo", None)
    if service is None or service.store is None:
        raise HTTPException(503, "this server keeps no SLIs (no insight store)")
    return service


def canary_document(service: SLOService, cluster: str | None, hours: float
                    ) -> dict[str, Any]:
    from reconciler.store import verification as kept  # SQLAlchemy: serve's only

    result = service.compiled()
    policy = verification(result.sources).canary if result is not None else None
    assert service.store is not None
    probes = kept.probes(service.store, cluster=cluster,
                         since=datetime.now(UTC) - timedelta(hours=hours))
    return {"policy": policy.model_dump(by_alias=True) if policy else None,
            "scheduled": service.scheduled,
            "note": service.canary.note,
            "probes": [{**p.__dict__, "started": _iso(p.started)} for p in probes]}


def _now() -> str:
    return _iso(datetime.now(UTC))


def _iso(stamp: datetime) -> str:
    return stamp.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
