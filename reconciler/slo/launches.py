"""The launch SLI of real rollouts: after a pass writes a reserved-tier Deployment, the time
from that write (the ``pincompile`` Apply entry of its managed fields) to the first of its
new pods Ready.

A rollout that needs no new pod (a change that leaves the pod template, a scale to zero)
is no launch and is dropped once the Deployment reports itself complete; one whose first
new pod is not Ready within ``LIMIT`` seconds is a launch failure. At most ``MOST``
rollouts are followed at once (more are dropped, and counted in the log); each costs a
GET of its Deployment and a LIST of its pods every ``EVERY`` seconds.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pincompile.contract import LABEL_TIER
from reconciler.canary.probe import FAILURES, reason_of
from reconciler.clients.access import ClusterAccess, api_error
from reconciler.kinds import KindInfo
from reconciler.model import PassReport

log = logging.getLogger("pincompile.serve.slo")
LIMIT = 600.0
EVERY = 2.0
MOST = 50
FIELD_MANAGER = "pincompile"
POD = KindInfo("v1", "Pod")


@dataclass
class Rollout:
    cluster: str
    namespace: str
    name: str
    seen: float
    """Monotonic time the pass reported it."""


class LaunchTracker:
    """Follows the reserved-tier rollouts of each pass (:meth:`observe`) in a thread."""

    def __init__(self, connection: Callable[[str], ClusterAccess | None],
                 record: Callable[[str, str, float | None], object],
                 tiers: frozenset[str] = frozenset({"reserved"})) -> None:
        self.connection = connection
        self.record = record
        """Given (cluster, tier, seconds or None for a failure)."""
        self.tiers = tiers
        self._following: dict[tuple[str, str, str], Rollout] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def observe(self, report: PassReport) -> None:
        """The Deployments a pass created, updated or replaced, to follow."""
        dropped = 0
        with self._lock:
            for name, cluster in report.clusters.items():
                for ref in [*cluster.created, *cluster.updated, *cluster.replaced]:
                    if ref.kind != "Deployment" or ref.namespace is None:
                        continue
                    key = (name, ref.namespace, ref.name)
                    if len(self._following) >= MOST and key not in self._following:
                        dropped += 1
                        continue
                    self._following[key] = Rollout(name, ref.namespace, ref.name,
                                                   time.monotonic())
        if dropped:
            log.warning("launch SLI: %d rollouts not followed (%d at once at most)",
                        dropped, MOST)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="launch-sli", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(EVERY):
            with self._lock:
                now = list(self._following.values())
            for rollout in now:
                if self.check(rollout):
                    with self._lock:
                        self._following.pop((rollout.cluster, rollout.namespace,
                                             rollout.name), None)

    def check(self, rollout: Rollout) -> bool:
        """Look at the rollout once; whether it is done with (recorded or dropped)."""
        conn = self.connection(rollout.cluster)
        if conn is None:
            return True
        try:
            deployment = conn.get({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {
                "name": rollout.name, "namespace": rollout.namespace}})
            if deployment is None:
                raise api_error(404, f'deployments.apps "{rollout.name}" not found',
                                "NotFound")
            tier = (deployment["metadata"].get("labels") or {}).get(LABEL_TIER)
            if tier not in self.tiers:
                return True
            applied = applied_at(deployment)
            if applied is None:
                return True
            ready = first_ready(conn, deployment, applied)
        except FAILURES as exc:
            log.info("launch SLI: %s/%s/%s: %s", rollout.cluster, rollout.namespace,
                     rollout.name, reason_of(exc))
            return time.monotonic() - rollout.seen > LIMIT
        if ready is not None:
            self.record(rollout.cluster, str(tier), max(0.0, ready - applied))
            return True
        if complete(deployment):
            return True  # no new pod was needed: no launch
        if time.monotonic() - rollout.seen > LIMIT:
            self.record(rollout.cluster, str(tier), None)
            return True
        return False


def applied_at(deployment: dict[str, Any]) -> float | None:
    """When ``pincompile`` last applied the object (its managed fields' time)."""
    for entry in deployment["metadata"].get("managedFields") or ():
        if entry.get("manager") == FIELD_MANAGER and entry.get("operation") == "Apply":
            return _epoch(entry.get("time"))
    return None


def complete(deployment: dict[str, Any]) -> bool:
    """Whether the Deployment's controller has rolled out its spec (every replica
    updated and available), or it wants no pod."""
    spec, status = deployment.get("spec") or {}, deployment.get("status") or {}
    want = spec.get("replicas", 1)
    if want == 0:
        return True
    return (status.get("observedGeneration", 0) >= deployment["metadata"].get("generation", 0)
            and status.get("updatedReplicas", 0) == want
            and status.get("availableReplicas", 0) >= want)


def first_ready(conn: ClusterAccess, deployment: dict[str, Any], since: float) -> float | None:
    """When the first pod created at or after ``since`` became Ready (None: none yet)."""
    labels = ((deployment.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    pods = conn.list(POD, namespace=deployment["metadata"]["namespace"],
                     label_selector=selector, lean=True)
    times = []
    for pod in pods["items"]:
        made = _epoch(pod["metadata"].get("creationTimestamp"))
        if made is None or made < since - 1:
            continue
        for condition in (pod.get("status") or {}).get("conditions") or ():
            if condition.get("type") == "Ready" and condition.get("status") == "True":
                at = _epoch(condition.get("lastTransitionTime"))
                if at is not None:
                    times.append(at)
    return min(times) if times else None


def _epoch(stamp: Any) -> float | None:
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).astimezone(
            UTC).timestamp()
    except ValueError:
        return None
