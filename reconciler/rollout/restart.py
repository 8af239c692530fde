"""A rollout restart of an app's workloads, zone by zone, with the gates of a zone-by-zone
rollout (:mod:`.plan`): every Deployment and DaemonSet of the app in the first zone's
clusters gets a new ``kubectl.kubernetes.io/restartedAt`` pod-template
annotation (as ``kubectl rollout restart`` writes it); the next zone starts only when
each of them has rolled out again, within the app's health timeout. A zone that does not
halts the restart: later zones keep their pods.

The annotation is applied with a field manager of its own (:data:`RESTART_MANAGER`), so
the reconciler's server-side apply neither removes it nor sees it as drift.

A running restart is claimed on the app's resource on the host (:class:`Claim`: which
restart, by whom, the server running it, renewed every :data:`RENEW_SECONDS`), so a
second server refuses another restart of the app, and a claim no longer renewed (its
server stopped) is taken over and the restart finished by another (:func:`stale`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from reconciler.model import Obj
from reconciler.rollout.plan import health_timeout, rolled_out

RESTARTED_AT_ANNOTATION = "kubectl.kubernetes.io/restartedAt"
RESTART_MANAGER = "pincompile-api-restart"
RESTARTABLE = {"Deployment": "apps/v1", "DaemonSet": "apps/v1"}
"""The kinds a restart patches (all the long-running kinds pincompile compiles to; serve's
RBAC in contrib/serve/ covers them), and their apiVersion."""
RESTART_APP_KINDS = frozenset({"PinApp", "PinterestService", "PinterestDaemon"})
"""App kinds whose pods run from a template a restart can roll."""
NOT_RESTARTABLE = {
    "PinterestJobSet": "its pods run to completion: `rerun` runs its Jobs again",
    "PinterestTrainingJob": "its pods run to completion: `rerun` runs the training job again",
    "PinterestCronJob": "it starts Jobs on its schedule: there is nothing running to restart",
    "PinPod": "a bare pod has no template to roll: `restart-container` says what can be done",
    "PinScaler": "it is a scaling policy, not a workload",
}


CLAIM_AT = "pincompute.io/restart-at"
CLAIM_BY = "pincompute.io/restart-by"
CLAIM_HOLDER = "pincompute.io/restart-holder"
CLAIM_RENEWED = "pincompute.io/restart-renewed"
RENEW_SECONDS = 10.0
STALE_SECONDS = 45.0
"""A claim not renewed for this long belongs to a server that stopped."""


@dataclass(frozen=True)
class Claim:
    """A running restart, as annotations on the app's resource on the host."""

    at: str
    """The restart's identity (:attr:`RestartPlan.at`)."""
    by: str
    holder: str
    """The server running it."""
    renewed: str
    """When the holder last said it runs it (RFC 3339 UTC)."""

    def age(self, now: float) -> float:
        """Seconds since it was renewed (infinite when that cannot be read)."""
        try:
            return now - datetime.fromisoformat(self.renewed.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return float("inf")


def claim_of(cr: Mapping[str, Any] | None) -> Claim | None:
    """The restart claimed on the app's resource, or None."""
    annotations = ((cr or {}).get("metadata") or {}).get("annotations") or {}
    if not annotations.get(CLAIM_AT):
        return None
    return Claim(str(annotations[CLAIM_AT]), str(annotations.get(CLAIM_BY) or ""),
                 str(annotations.get(CLAIM_HOLDER) or ""),
                 str(annotations.get(CLAIM_RENEWED) or ""))


def stale(claim: Claim, now: float) -> bool:
    """Whether the claim's server stopped renewing it."""
    return claim.age(now) > STALE_SECONDS


def claim_patch(ref: Obj, claim: Claim, resource_version: str | None = None) -> Obj:
    """The server-side apply (by :data:`RESTART_MANAGER`) of the claim on the resource
    ``ref``; with ``resource_version``, only if the resource is still at it."""
    metadata: dict[str, Any] = {**ref["metadata"], "annotations": {
        CLAIM_AT: claim.at, CLAIM_BY: claim.by, CLAIM_HOLDER: claim.holder,
        CLAIM_RENEWED: claim.renewed}}
    if resource_version:
        metadata["resourceVersion"] = resource_version
    return {**ref, "metadata": metadata}


def release_patch(ref: Obj) -> Obj:
    """The server-side apply that drops the claim: the same manager applies no annotation,
    so the API server removes the ones it set (and only those)."""
    return {**ref, "metadata": dict(ref["metadata"])}


@dataclass(frozen=True)
class Workload:
    """One object a restart patches."""

    cluster: str
    zone: str
    kind: str
    namespace: str
    name: str
    timeout: float = 600.0
    """The app's health timeout as this object carries it."""

    @property
    def ref(self) -> Obj:
        return {"apiVersion": RESTARTABLE[self.kind], "kind": self.kind,
                "metadata": {"name": self.name, "namespace": self.namespace}}

    def __str__(self) -> str:
        return f"{self.cluster}: {self.kind}/{self.namespace}/{self.name}"


@dataclass
class RestartPlan:
    """What a restart does, zone by zone (zones in the order a rollout goes)."""

    app: tuple[str, str, str]
    at: str
    """The annotation's value (RFC 3339 UTC): this restart's identity."""
    zones: list[tuple[str, list[Workload]]]
    timeout: float = 600.0

    @property
    def workloads(self) -> list[Workload]:
        return [w for _, zone in self.zones for w in zone]


def why_not_restartable(kind: str) -> str | None:
    """Why an app of ``kind`` cannot be restarted, or None when it can."""
    if kind in RESTART_APP_KINDS:
        return None
    return NOT_RESTARTABLE.get(kind, "it has no workloads to restart")


def plan_restart(app: tuple[str, str, str], found: Mapping[str, Iterable[Obj]],
                 zone_of: Mapping[str, str], at: str) -> RestartPlan:
    """The restart of ``found`` (per cluster: the app's live objects there), zone by zone in
    sorted zone order; objects of other kinds are left alone."""
    by_zone: dict[str, list[Workload]] = {}
    for cluster, objects in found.items():
        zone = zone_of.get(cluster, cluster)
        for obj in objects:
            if obj.get("kind") not in RESTARTABLE:
                continue
            meta = obj["metadata"]
            by_zone.setdefault(zone, []).append(Workload(
                cluster, zone, str(obj["kind"]), str(meta.get("namespace") or ""),
                str(meta["name"]), health_timeout(obj)))
    zones = [(z, sorted(by_zone[z], key=lambda w: (w.cluster, w.kind, w.name)))
             for z in sorted(by_zone)]
    timeout = max((w.timeout for _, ws in zones for w in ws), default=600.0)
    return RestartPlan(app, at, zones, timeout)


def restart_patch(workload: Workload, at: str) -> Obj:
    """The server-side apply (by :data:`RESTART_MANAGER`) that rolls the workload's pods."""
    return {**workload.ref, "spec": {"template": {"metadata": {"annotations": {
        RESTARTED_AT_ANNOTATION: at}}}}}


def restarted(live: Obj | None, at: str) -> tuple[bool, str]:
    """Whether a workload carries restart ``at`` and has rolled its pods (a Deployment by
    :func:`~reconciler.rollout.plan.rolled_out`); if not, why."""
    if live is None:
        return False, "it is gone"
    template = ((live.get("spec") or {}).get("template") or {}).get("metadata") or {}
    if (template.get("annotations") or {}).get(RESTARTED_AT_ANNOTATION) != at:
        return False, "another restart or apply replaced this one's annotation"
    if live.get("kind") == "Deployment":
        return rolled_out(live)
    status = live.get("status") or {}  # a DaemonSet
    if int(status.get("observedGeneration", 0)) < int(live["metadata"].get("generation", 0)):
        return False, "the new generation is not observed yet"
    want = int(status.get("desiredNumberScheduled", 0))
    updated, available = (int(status.get("updatedNumberScheduled", 0)),
                          int(status.get("numberAvailable", 0)))
    if updated < want:
        return False, f"{updated}/{want} pods updated"
    if available < want:
        return False, f"{available}/{want} updated pods available"
    return True, ""


@dataclass
class RestartRun:
    """How a restart went: zones done, and why it stopped early (empty when complete)."""

    done: list[str] = field(default_factory=list)
    stopped: str = ""


def run_restart(plan: RestartPlan, *, apply: Callable[[Workload, Obj], object],
                fetch: Callable[[Workload], Obj | None], record: Callable[[str, str], None],
                paused: Callable[[], str | None] = lambda: None, poll: float = 1.0,
                claimed: Callable[[], bool] = lambda: True,
                clock: Callable[[], float] = time.monotonic,
                sleep: Callable[[float], None] = time.sleep) -> RestartRun:
    """Patch zone after zone, each gated on the one before having rolled out.

    ``apply(workload, body)`` writes a patch, ``fetch(workload)`` reads the workload,
    ``record(reason, message)`` records an event, ``paused()`` says who paused the app's
    rollout (a pause stops the restart before its next zone), ``claimed()`` whether this
    server still holds the restart's claim (another took it over: stop, recording
    nothing)."""
    run = RestartRun()
    for index, (zone, workloads) in enumerate(plan.zones):
        if not claimed():
            run.stopped = "another server took this restart over"
            return run
        who = paused() if index else None
        if who:
            run.stopped = (f"stopped before zone {zone}: the rollout was paused by {who}; "
                           "later zones keep their pods")
            record("RestartPaused", run.stopped)
            return run
        for workload in workloads:
            apply(workload, restart_patch(workload, plan.at))
        record("RestartZone", f"zone {zone}: restarting " +
               ", ".join(str(w) for w in workloads))
        deadline = clock() + plan.timeout
        while True:
            waiting = ""
            for workload in workloads:
                ok, why = restarted(fetch(workload), plan.at)
                if not ok:
                    waiting = f"{workload}: {why}"
                    break
            if not waiting or clock() >= deadline or not claimed():
                break
            sleep(poll)
        if not claimed():
            run.stopped = "another server took this restart over"
            return run
        if waiting:
            run.stopped = (f"zone {zone} did not roll out within {plan.timeout:.0f}s "
                           f"({waiting}); later zones keep their pods")
            record("RestartHalted", run.stopped)
            return run
        run.done.append(zone)
    record("RestartComplete", f"every zone restarted ({', '.join(run.done) or 'none'})")
    return run
