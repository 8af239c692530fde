"""The API's actions: operations on an app's running workloads, never its desired state
(git is the only way desired state changes).

* ``POST .../restart``: a rollout restart, zone by zone (:mod:`reconciler.rollout.restart`),
  run by this server in the background: 202 with the zones and objects, in order.
* ``POST .../rollout/pause`` and ``.../rollout/resume``: an annotation on the app's
  resource on the host (:mod:`reconciler.rollout.pause`); the reconciler does not promote
  the next zone while it is there.
* ``POST .../rerun``: a PinterestJobSet's Jobs or a PinterestTrainingJob's training job
  deleted and created again (:mod:`reconciler.api.rerun`).
* ``POST .../restart-container``: 501, and why.
* ``POST .../stop``, ``.../scale``, ``.../image``: 409 with the spec edit to commit
  (:mod:`reconciler.api.spec_edits`).

Each action is authorized as a verb of its own (:data:`reconciler.api.access.ACTIONS`),
rate-limited and audited like every call, and recorded in the insight store as a
``pincompile`` event of the app, so ``events`` shows who did what.
"""

from __future__ import annotations

import os
import re
import socket
import threading
import uuid
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from pincompile.manifest import LABEL_APP, LABEL_KIND, LABEL_PROJECT
from reconciler.api import rerun, restarts
from reconciler.api.access import Caller
from reconciler.api.models import ActionAnswer, Problem, ZoneStep
from reconciler.clients import read, write
from reconciler.clients.connect import Connection
from reconciler.clock import SYSTEM_CLOCK, Clock
from reconciler.clock import iso_time as _iso
from reconciler.errors import CLUSTER_ERRORS, explain
from reconciler.host import cr_ref, read_apps, spec_kinds
from reconciler.kinds import KindInfo
from reconciler.model import AppKey, Obj
from reconciler.rollout import pause, restart
from reconciler.rollout.restart import Claim
from reconciler.store.records import EventRecord

if TYPE_CHECKING:
    from reconciler.store import Store

APP_PATH = "/api/v1/apps/{kind}/{project}/{name}"
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
Authorize = Callable[[Request, Caller, str, str, str], Awaitable[None]]


class Operations:
    """Restarts and reruns running in this server: one per app at a time, at most
    ``per_user`` of one user and ``per_project`` of one project, ``most`` in all (so no
    tenant fills the server's share alone); ``identity`` names this server in the
    restarts' claims; ``clock`` stamps and ages the claims and pauses and times the
    restarts' waits."""

    def __init__(self, most: int = 8, identity: str | None = None, *, per_user: int = 2,
                 per_project: int = 4, clock: Clock = SYSTEM_CLOCK) -> None:
        self.most, self.per_user, self.per_project = most, per_user, per_project
        self.identity = identity or f"{socket.gethostname()}/{os.getpid()}"
        self.clock = clock
        self._running: dict[AppKey, tuple[str, str]] = {}
        """app → (what runs, for whom)"""
        self._lock = threading.Lock()

    def refusal(self, app: AppKey, user: str) -> str | None:
        """Why an action of ``user`` on ``app`` cannot start now (None: it can)."""
        with self._lock:
            return self._refusal(app, user)

    def _refusal(self, app: AppKey, user: str) -> str | None:
        if app in self._running:
            return f"a {self._running[app][0]} of {'/'.join(app)} is running already"
        if len(self._running) >= self.most:
            return f"{self.most} actions are running in this server already"
        if sum(other[1] == app[1] for other in self._running) >= self.per_project:
            return (f"{self.per_project} actions of project {app[1]} are running in this "
                    "server already")
        if sum(who == user for _, who in self._running.values()) >= self.per_user:
            return f"{user} has {self.per_user} actions running in this server already"
        return None

    def start(self, app: AppKey, what: str, work: Callable[[], None],
              user: str = "") -> str | None:
        """Run ``work`` in a thread of its own; why not, when it cannot start now."""
        with self._lock:
            why = self._refusal(app, user)
            if why is not None:
                return why
            self._running[app] = (what, user)

        def run() -> None:
            try:
                work()
            finally:
                with self._lock:
                    self._running.pop(app, None)

        threading.Thread(target=run, daemon=True, name=f"{what}-{'/'.join(app)}").start()
        return None

    def running(self, app: AppKey) -> str | None:
        with self._lock:
            found = self._running.get(app)
            return found[0] if found else None


class ActionGateway(Protocol):
    """What the actions use of the API's gateway (:class:`reconciler.api.app.Gateway`)."""

    @property
    def store(self) -> Store: ...

    @property
    def host(self) -> Connection | None: ...

    @property
    def pods(self) -> Any: ...

    @property
    def operations(self) -> Operations: ...

    @property
    def apps(self) -> Any: ...


Run = Callable[[ActionGateway, AppKey, str], ActionAnswer]
"""An action: ``run(gateway, app, user)``, its answer (or an HTTPException saying why not)."""


def record(store: Store, app: AppKey, reason: str, message: str, *,
           warning: bool = False) -> None:
    """A ``pincompile`` event of the app in the insight store (what ``events`` shows)."""
    store.add_events([EventRecord(app=app, reason=reason, message=message[:4000],
                                  uid=f"api-{uuid.uuid4()}", last_seen=datetime.now(UTC),
                                  source="pincompile", warning=warning)])


def _host(gateway: ActionGateway) -> Connection:
    if gateway.host is None or gateway.pods is None:
        raise HTTPException(503, "actions need the host and member clusters (serve "
                                 "--host-context)")
    return gateway.host


def check_names(app: AppKey) -> None:
    """422 naming the path parameter that no app on the host could have as its project or
    name (a DNS-1123 label), before the host is asked."""
    for field, value in (("project", app[1]), ("name", app[2])):
        if len(value) > 63 or not DNS_LABEL.fullmatch(value):
            raise HTTPException(422, f"{field}: {value[:80]!r} is not a project or app name "
                                     "(a DNS-1123 label: at most 63 lowercase letters, digits "
                                     "and '-', starting and ending with a letter or digit)")


def app_resource(host: Connection, app: AppKey) -> Obj:
    """The app's resource on the host (404 when there is none, 422 for a name no app
    could have)."""
    check_names(app)
    try:
        found = read.get(host, cr_ref(app))
    except CLUSTER_ERRORS as exc:
        raise HTTPException(503, f"the host cluster: {explain(exc)}") from None
    if found is None:
        raise HTTPException(404, f"{'/'.join(app)} not found")
    return found


def placed_clusters(gateway: ActionGateway, app: AppKey) -> list[str]:
    status: Mapping[str, Any] = gateway.apps.statuses().get(app) or {}
    return sorted(str(c.get("name")) for c in status.get("clusters") or [] if c.get("name"))


def member_zones(host: Connection) -> dict[str, str]:
    """Each member cluster's zone, from the host's Cluster resources."""
    kinds = [k for k in spec_kinds() if k.kind == "Cluster"]
    return {key[2]: str((cr.get("spec") or {}).get("zone") or key[2])
            for key, cr in read_apps(host, kinds).items()}


def app_objects(conn: Connection, app: AppKey, kinds: Mapping[str, str]) -> list[Obj]:
    """The app's live objects of ``kinds`` (kind → apiVersion) in one member cluster."""
    kind, project, name = app
    labels = f"{LABEL_APP}={name},{LABEL_PROJECT}={project},{LABEL_KIND}={kind}"
    out: list[Obj] = []
    for found_kind, api_version in sorted(kinds.items()):
        info = KindInfo(api_version, found_kind)
        if read.served(conn, info):
            out += list(read.list_managed(conn, info, label_selector=labels)[0].values())
    return out


def members_of(gateway: ActionGateway, app: AppKey) -> dict[str, Connection]:
    """A connection to every member cluster the app is placed in (503 naming one that
    cannot be reached)."""
    clusters = placed_clusters(gateway, app)
    if not clusters:
        raise HTTPException(409, f"{'/'.join(app)} is placed in no cluster")
    found = gateway.pods.connect(clusters)
    missing = {c: why for c, why in found.items() if isinstance(why, str)}
    if missing:
        raise HTTPException(503, "; ".join(f"member cluster {c}: {why}"
                                           for c, why in sorted(missing.items())))
    return {c: conn for c, conn in found.items() if not isinstance(conn, str)}


# -- restart ----------------------------------------------------------------------------------
def start_restart(gateway: ActionGateway, app: AppKey, user: str) -> ActionAnswer:
    """Plan a restart of the app's workloads, claim it on the host and start it in the
    background (409 while another server's claim on the app is alive)."""
    why = restart.why_not_restartable(app[0])
    if why is not None:
        raise HTTPException(409, f"{app[0]} cannot be restarted: {why}")
    busy = gateway.operations.refusal(app, user)  # before the clusters are asked anything
    if busy is not None:
        raise HTTPException(409, busy)
    host = _host(gateway)
    cr = app_resource(host, app)
    who = pause.paused_by(cr)
    if who:
        raise HTTPException(409, f"the rollout of {'/'.join(app)} is paused by {who}: "
                                 "`rollout resume` it first")
    clock = gateway.operations.clock
    running = restart.claim_of(cr)
    if running is not None and not restart.stale(running, clock()):
        raise HTTPException(409, f"a restart of {'/'.join(app)} by {running.by} "
                                 f"({running.at}) is running in {running.holder}")
    plan, members = _plan_restart(gateway, host, app, _iso(clock()))
    claim = Claim(plan.at, user, gateway.operations.identity, plan.at)
    order = " then ".join(z for z, _ in plan.zones)
    message = (f"restarting zone by zone ({order}): each zone's workloads get "
               f"{restart.RESTARTED_AT_ANNOTATION}={plan.at}; the next zone starts when "
               f"they have rolled out, within {plan.timeout:.0f}s; `events` shows progress")
    _run_restart(gateway, host, app, plan, members, claim, cr, announce=lambda: record(
        gateway.store, app, "RestartRequested", f"{user}: {message}"))
    return ActionAnswer(action="restart", app="/".join(app), user=user, message=message,
                        zones=[ZoneStep(zone=z, objects=[str(w) for w in ws])
                               for z, ws in plan.zones])


def resume_restart(gateway: ActionGateway, app: AppKey, left: Claim) -> None:
    """Take over the restart ``left`` by a server that stopped renewing its claim, and
    run it again from its first zone: zones it restarted pass at once."""
    host = _host(gateway)
    cr = app_resource(host, app)
    clock = gateway.operations.clock
    current = restart.claim_of(cr)
    if current != left or not restart.stale(left, clock()):
        return  # ended, renewed or taken over meanwhile
    plan, members = _plan_restart(gateway, host, app, left.at)
    claim = Claim(left.at, left.by, gateway.operations.identity, _iso(clock()))
    message = (f"{claim.holder} took over the restart by {left.by} at {left.at} from "
               f"{left.holder} (its claim was last renewed {left.age(clock()):.0f}s "
               "ago); zones already restarted pass at once")
    _run_restart(gateway, host, app, plan, members, claim, cr,
                 announce=lambda: record(gateway.store, app, "RestartResumed", message))


def _plan_restart(gateway: ActionGateway, host: Connection, app: AppKey, at: str
                  ) -> tuple[restart.RestartPlan, dict[str, Connection]]:
    members = members_of(gateway, app)
    try:
        zones = member_zones(host)
        found = {c: app_objects(conn, app, restart.RESTARTABLE) for c, conn in members.items()}
    except CLUSTER_ERRORS as exc:
        raise HTTPException(503, explain(exc)) from None
    plan = restart.plan_restart(app, found, zones, at)
    if not plan.workloads:
        raise HTTPException(409, f"{'/'.join(app)} has no Deployment or DaemonSet in "
                                 "its clusters yet")
    return plan, members


def _run_restart(gateway: ActionGateway, host: Connection, app: AppKey,
                 plan: restart.RestartPlan, members: dict[str, Connection], claim: Claim,
                 cr: Obj, announce: Callable[[], None]) -> None:
    """Claim the restart, ``announce()`` it and run it in the background (409 when
    another server claimed the app first)."""
    store, clock = gateway.store, gateway.operations.clock

    def note(reason: str, message: str) -> None:
        record(store, app, reason, f"{message} (restart by {claim.by} at {plan.at})",
               warning=reason == "RestartHalted")

    def work(claimed: Callable[[], bool]) -> None:
        try:
            restart.run_restart(
                plan, record=note, claimed=claimed,
                apply=lambda w, body: write.apply(members[w.cluster], body,
                                                  manager=restart.RESTART_MANAGER),
                fetch=lambda w: read.get(members[w.cluster], w.ref),
                paused=lambda: pause.paused_by(read.get(host, cr_ref(app))),
                clock=clock.monotonic, sleep=clock.sleep)
        except CLUSTER_ERRORS as exc:
            note("RestartHalted", f"a cluster failed: {explain(exc)}; later zones keep "
                                  "their pods")

    running = gateway.operations.running(app)
    if running:
        raise HTTPException(409, f"a {running} of {'/'.join(app)} is running already")
    try:
        taken = restarts.take(host, app, claim, cr)
    except CLUSTER_ERRORS as exc:
        raise HTTPException(503, f"the host cluster: {explain(exc)}") from None
    if not taken:
        raise HTTPException(409, f"another restart of {'/'.join(app)} started meanwhile")
    announce()
    busy = gateway.operations.start(
        app, "restart", lambda: restarts.run_claimed(host, app, claim, work, clock=clock),
        claim.by)
    if busy:
        restarts.release(host, app, claim)
        raise HTTPException(409, busy)


# -- rerun ------------------------------------------------------------------------------------
def start_rerun(gateway: ActionGateway, app: AppKey, user: str) -> ActionAnswer:
    """Find the app's Jobs (or training job) and run them again in the background."""
    why = rerun.why_not_rerunnable(app[0])
    if why is not None:
        raise HTTPException(409, f"{app[0]} cannot be rerun: {why}")
    busy = gateway.operations.refusal(app, user)
    if busy is not None:
        raise HTTPException(409, busy)
    app_resource(_host(gateway), app)
    members = members_of(gateway, app)
    try:
        found = [(c, obj) for c, conn in sorted(members.items())
                 for obj in app_objects(conn, app, rerun.RERUN_KINDS[app[0]])]
    except CLUSTER_ERRORS as exc:
        raise HTTPException(503, explain(exc)) from None
    if not found:
        raise HTTPException(409, f"{'/'.join(app)} has nothing to run again in its clusters "
                                 "yet (the reconciler has not created it)")
    store = gateway.store

    def note(reason: str, message: str) -> None:
        record(store, app, reason, f"{message} (rerun by {user})",
               warning=reason == "RerunFailed")

    def delete(cluster: str, live: Obj) -> bool:
        write.delete(members[cluster], live, propagation="Foreground")
        return write.wait_gone(members[cluster], live, uid=live["metadata"].get("uid"),
                               timeout=120.0)

    def work() -> None:
        try:
            rerun.run_rerun(found, delete=delete, record=note,
                            create=lambda c, obj: write.apply(members[c], obj))
        except CLUSTER_ERRORS as exc:
            note("RerunFailed", f"a cluster failed: {explain(exc)}; the reconciler's next "
                                "pass creates what is missing")

    busy = gateway.operations.start(app, "rerun", work, user)
    if busy:
        raise HTTPException(409, busy)
    objects = [rerun.describe(c, obj) for c, obj in found]
    message = ("deleting and creating again, one after the other (each waits until the old "
               "one and its pods are gone, at most 120s): " + ", ".join(objects))
    record(store, app, "RerunRequested", f"{user}: {message}")
    return ActionAnswer(action="rerun", app="/".join(app), user=user, message=message,
                        objects=objects)


# -- pause and resume -------------------------------------------------------------------------
def set_paused(gateway: ActionGateway, app: AppKey, user: str, paused: bool) -> ActionAnswer:
    """Write (or remove) the pause annotation on the app's resource on the host."""
    name = "/".join(app)
    if app[0] not in pause.ROLLOUT_APP_KINDS:
        raise HTTPException(409, f"{app[0]} has no zone-by-zone rollout to pause or resume "
                                 f"(only {', '.join(sorted(pause.ROLLOUT_APP_KINDS))})")
    host = _host(gateway)
    current = pause.paused_by(app_resource(host, app))
    if paused and current:
        message = f"the rollout of {name} is paused already (by {current})"
    elif not paused and not current:
        message = f"the rollout of {name} is not paused"
    else:
        ref = cr_ref(app)
        body = pause.pause_patch(ref, user, _iso(gateway.operations.clock())) if paused \
            else pause.resume_patch(ref)
        try:
            write.apply(host, body, manager=pause.PAUSE_MANAGER)
        except CLUSTER_ERRORS as exc:
            raise HTTPException(503, f"the host cluster: {explain(exc)}") from None
        message = (f"rollout paused by {user}: the zone being rolled out finishes and the "
                   "next zone waits for `rollout resume`") if paused else \
            (f"rollout resumed by {user} (paused by {current}): the next zone starts at "
             "the reconciler's next pass")
        record(gateway.store, app, "RolloutPauseRequested" if paused
               else "RolloutResumeRequested", message)
    return ActionAnswer(action="pause" if paused else "resume", app=name, user=user,
                        message=message)


def pause_app(gateway: ActionGateway, app: AppKey, user: str) -> ActionAnswer:
    """``rollout pause``: :func:`set_paused` with ``paused=True``."""
    return set_paused(gateway, app, user, True)


def resume_app(gateway: ActionGateway, app: AppKey, user: str) -> ActionAnswer:
    """``rollout resume``: :func:`set_paused` with ``paused=False``."""
    return set_paused(gateway, app, user, False)


RESTART_CONTAINER_501 = (
    "not done: this server cannot restart one container in place. The Kubernetes API has "
    "no call that restarts a container of a running pod (the kubelet restarts a container "
    "only when it exits); killing its main process through exec would depend on the image "
    "(a shell, a kill command, PID 1 handling signals), so this server does not try. "
    "Nothing was changed. "
    "A PinPod is a bare pod: deleting it stops every container, and the reconciler "
    "creates it again, with the same spec, at its next pass (a push, or the resync "
    "interval of `pincompile serve`, 3m by default).")


def mount_actions(api: FastAPI, caller: Callable[..., Awaitable[Caller]],
                  authorize: Authorize) -> None:
    """Add the action routes to the API's app; ``caller`` authenticates and rate-limits,
    ``authorize(request, caller, action, kind, project)`` authorizes."""
    router = APIRouter(dependencies=[Depends(caller)],
                       responses={409: {"model": Problem}, 404: {"model": Problem}})

    def who(request: Request) -> Caller:
        found: Caller = request.state.caller
        return found

    async def act(request: Request, verb: str, app: AppKey, run: Run) -> ActionAnswer:
        """Authorize the caller for ``verb`` on the app, then ``run`` the action in a
        thread (it talks to the clusters); the audit middleware records the call."""
        user = who(request)
        await authorize(request, user, verb, app[0], app[1])
        return await run_in_threadpool(run, request.app.state.gateway, app, user.user)

    @router.post(f"{APP_PATH}/restart", status_code=202, response_model=ActionAnswer,
                 summary="Restart the app's workloads, zone by zone (verb: update "
                         "<kind>s/restart)")
    async def restart_app(request: Request, kind: str, project: str, name: str
                          ) -> ActionAnswer:
        return await act(request, "restart", (kind, project, name), start_restart)

    @router.post(f"{APP_PATH}/rollout/pause", response_model=ActionAnswer,
                 summary="Pause the app's zone-by-zone rollout (verb: update "
                         "<kind>s/rollout)")
    async def pause_rollout(request: Request, kind: str, project: str, name: str
                            ) -> ActionAnswer:
        return await act(request, "rollout", (kind, project, name), pause_app)

    @router.post(f"{APP_PATH}/rollout/resume", response_model=ActionAnswer,
                 summary="Resume the app's zone-by-zone rollout (verb: update "
                         "<kind>s/rollout)")
    async def resume_rollout(request: Request, kind: str, project: str, name: str
                             ) -> ActionAnswer:
        return await act(request, "rollout", (kind, project, name), resume_app)

    @router.post(f"{APP_PATH}/rerun", status_code=202, response_model=ActionAnswer,
                 summary="Run a PinterestJobSet's Jobs or a PinterestTrainingJob again "
                         "(verb: update <kind>s/rerun)")
    async def rerun_app(request: Request, kind: str, project: str, name: str
                        ) -> ActionAnswer:
        return await act(request, "rerun", (kind, project, name), start_rerun)

    @router.post(f"{APP_PATH}/restart-container", status_code=501,
                 responses={501: {"model": Problem}},
                 summary="Restart one container of a PinPod in place: not possible on this "
                         "server, answered 501 with what to do (verb: update "
                         "pinpods/restart-container)")
    async def restart_container(request: Request, kind: str, project: str, name: str
                                ) -> JSONResponse:
        await authorize(request, who(request), "restart-container", kind, project)
        if kind != "PinPod":
            raise HTTPException(409, f"restart-container is for a PinPod; {kind} runs its "
                                     "pods from a template: `restart` restarts them")
        return JSONResponse({"detail": RESTART_CONTAINER_501}, status_code=501)

    api.include_router(router)
