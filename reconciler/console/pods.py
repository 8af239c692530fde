"""An app's pods across member clusters as the app page lists them, from the API's pod
source (:meth:`reconciler.api.app.PodSource.pods`, a watch per member cluster)."""

from __future__ import annotations

from dataclasses import dataclass, field

from fastapi import HTTPException

from reconciler.api.app import Gateway, app_pods
from reconciler.api.models import PodList
from reconciler.model import AppKey


@dataclass(frozen=True)
class PodRow:
    """One pod of an app as the app page lists it."""

    cluster: str
    name: str
    node: str
    phase: str
    ready: str
    restarts: int
    state: str
    """Why a container waits or ended now (``main: CrashLoopBackOff``), if one does."""
    last_termination: str
    """Why containers last ended (``main: OOMKilled (137)``), empty if none ever did."""
    containers: tuple[str, ...] = ()
    """Its containers in the pod's spec order (the terminal opens the first unless one is
    picked)."""


@dataclass
class Pods:
    """An app's pods across member clusters, and the clusters that could not be read (or
    why none could)."""

    rows: list[PodRow] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    problem: str = ""
    containers: list[str] = field(default_factory=list)
    """Every container name of the pods (what the logs panel may narrow to)."""

    @property
    def clusters(self) -> list[str]:
        return sorted({row.cluster for row in self.rows})


def pods_of(found: PodList) -> Pods:
    rows = []
    for pod in found.items:
        states = [f"{c.name}: {c.reason}" for c in pod.containers if c.reason]
        ended = [f"{c.name}: {c.lastTerminationReason}"
                 + (f" ({c.lastTerminationExitCode})"
                    if c.lastTerminationExitCode is not None else "")
                 for c in pod.containers if c.lastTerminationReason]
        rows.append(PodRow(cluster=pod.cluster, name=pod.name, node=pod.node or "-",
                           phase=pod.phase, ready=pod.ready, restarts=pod.restarts,
                           state=", ".join(states), last_termination=", ".join(ended),
                           containers=tuple(c.name for c in pod.containers)))
    return Pods(rows=rows, unreadable=[(p.cluster, p.message) for p in found.unreadable],
                containers=sorted({c.name for p in found.items for c in p.containers}))


def read_pods(gateway: Gateway, app: AppKey) -> Pods:
    """``app``'s pods as the API's pods route reads them (blocking: the first read of a
    member cluster waits for its watch to list)."""
    try:
        return pods_of(app_pods(gateway, app))
    except HTTPException as exc:
        return Pods(problem=str(exc.detail))
