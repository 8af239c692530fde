"""One app's page, ``/apps/KIND/PROJECT/NAME``: its status, placement, rollout, pods (each
with a terminal button for a caller who may exec), the actions the caller may run, logs
panel, scaling chart, events and history with commit links; after an action, its outcome
on top."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fastapi import Request
from fastapi.concurrency import run_in_threadpool
from starlette.responses import Response

from reconciler.api.access import Caller
from reconciler.console.actions import offered
from reconciler.console.chart import HOURS, scaling_chart
from reconciler.console.links import commit_url
from reconciler.console.logroutes import may_read_logs
from reconciler.console.logs import LogFilter
from reconciler.console.pods import read_pods
from reconciler.console.respond import (
    HEADERS,
    TERMINAL_HEADERS,
    gateway_of,
    outcome_of,
    problem_page,
    render_page,
    sources_of,
)
from reconciler.console.views import app_page
from reconciler.model import AppKey
from reconciler.status.document import APP_KINDS

EVENTS_SHOWN = 200
REVISIONS_SHOWN = 50


async def app_response(request: Request, who: Caller, key: AppKey) -> Response:
    kind, project, name = key
    gateway = gateway_of(request)
    if kind not in APP_KINDS:
        return await problem_page(request, who, 404, f"no app kind {kind!r}; one of "
                                                     f"{', '.join(sorted(APP_KINDS))}")
    if not await run_in_threadpool(gateway.access.allowed, who, "read", kind, project):
        return await problem_page(request, who, 403, f"{who.user} may not read {kind} apps "
                                                     f"in project {project}")
    status = gateway.apps.statuses().get(key)
    if status is None:
        return await problem_page(request, who, 404, f"{kind}/{project}/{name} not found")
    events = await run_in_threadpool(gateway.store.events, key, limit=EVENTS_SHOWN)
    history = await run_in_threadpool(gateway.store.history, key, limit=REVISIONS_SHOWN)
    page = app_page(key, status, events, history)
    page.pods = await run_in_threadpool(read_pods, gateway, key)
    chart = None
    if kind == "PinScaler":
        now = datetime.now(UTC)
        samples = await run_in_threadpool(gateway.store.samples, key,
                                          since=now - timedelta(hours=HOURS))
        chart = scaling_chart(samples, now)
    repo = sources_of(request).repo
    links = {r.commit: commit_url(repo, r.commit) for r in history if r.commit}

    supported = offered(kind)
    verbs = {action.verb for action in supported} | {"exec"}

    def granted() -> set[str]:
        return {verb for verb in verbs if gateway.access.allowed(who, verb, kind, project)}

    allowed = await run_in_threadpool(granted)
    actions = [action for action in supported if action.verb in allowed]
    may_exec = "exec" in allowed
    return await render_page(request, "app.html", who, page=page, log_filter=LogFilter(),
                             commit_links=links, chart=chart, hours=HOURS,
                             may_logs=await may_read_logs(request, who, kind, project),
                             may_exec=may_exec, actions=actions, supported=supported,
                             outcome=outcome_of(request, who, key),
                             headers=TERMINAL_HEADERS if may_exec else HEADERS)

