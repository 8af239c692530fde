"""Set the emulated CPU / memory usage of one app's pods (``pincompile fleet load``).

kwok reports each container's usage as a fraction of its requests (``usage.yaml``): 30%
CPU and 40% memory unless the nodes of the pod's cluster carry the annotation
``<app>.<namespace>.load.fleet.pincompute.io/<kind>.<resource>`` with another fraction
(until the unix time in ``...<resource>-until``, when set). Annotating the nodes rather
than the pods makes the load apply to the pods the HPA adds as well. metrics-server picks
a change up at its next scrape (15 s).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from pincompile.contract import AppRef, AppRefError, parse_app_ref
from pincompile.manifest import LABEL_APP, LABEL_KIND, LABEL_PROJECT

DOMAIN = "load.fleet.pincompute.io"
RESOURCES = ("cpu", "memory")
#: at most 10x the requests (a container may use more than it requests, up to its limit)
MAX_FRACTION = 10.0
_PERCENT = re.compile(r"^(\d+(?:\.\d+)?)%$")


class LoadError(ValueError):
    """The app or the load asked for is not valid (or the app has no pods)."""


def parse_app(text: str) -> AppRef:
    """``PinApp/search/search-api`` -> AppRef (:func:`pincompile.appref.parse_app_ref`).
    Raises LoadError."""
    try:
        return parse_app_ref(text)
    except AppRefError as exc:
        raise LoadError(str(exc)) from None


def parse_fraction(text: str) -> float:
    """``90%`` -> 0.9 (0% to 1000% of the requests). Raises LoadError."""
    match = _PERCENT.match(text.strip())
    if not match:
        raise LoadError(f"'{text}' is not a percentage of the requests like 90%")
    fraction = float(match.group(1)) / 100
    if fraction > MAX_FRACTION:
        raise LoadError(f"'{text}' is more than {MAX_FRACTION * 100:.0f}% of the requests")
    return fraction


def annotation_key(namespace: str, app: str, kind: str, resource: str) -> str:
    """The node annotation ``usage.yaml`` reads the fraction of ``resource`` from."""
    return f"{app}.{namespace}.{DOMAIN}/{kind}.{resource}"


@dataclass(frozen=True)
class LoadSet:
    """Where a load was set: one cluster, the app's namespaces there, its pods now."""

    cluster: str
    namespaces: tuple[str, ...]
    pods: int
    nodes: int


def _annotations(namespaces: set[str], app: AppRef, kind: str,
                 usage: dict[str, float | None], until: float | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for namespace in sorted(namespaces):
        for resource, fraction in usage.items():
            key = annotation_key(namespace, app.name, kind, resource)
            out[key] = None if fraction is None else f"{fraction:g}"
            out[f"{key}-until"] = (None if fraction is None or until is None
                                   else f"{until:.0f}")
    return out


def _pods_of(core: Any, app: AppRef) -> list[Any]:
    """The app's pods in one cluster: labelled with its name and kind, in its project's
    namespaces (those labelled with the project; else the one named after it)."""
    labelled = core.list_namespace(label_selector=f"{LABEL_PROJECT}={app.project}").items
    namespaces = [n.metadata.name for n in labelled] or [app.project]
    pods = []
    for namespace in namespaces:
        pods += [p for p in core.list_namespaced_pod(
                     namespace, label_selector=f"{LABEL_APP}={app.name}").items
                 if (p.metadata.labels or {}).get(LABEL_KIND, "").lower() == app.kind.lower()]
    return pods


def set_load(state: Any, app: AppRef, usage: dict[str, float | None],
             cluster: str | None = None, duration: float | None = None) -> list[LoadSet]:
    """Set (fraction) or reset (None) the usage of ``app``'s pods per resource in every
    member cluster that runs them (or only ``cluster``), for ``duration`` seconds or until
    changed. ``state`` is the running fleet's FleetState. Raises LoadError when no pod
    of the app runs there."""
    from kubernetes import client

    from reconciler.fleet.fleet import HOST, api_client

    runtimes = [r for r in state.clusters if r.name != HOST]
    if cluster is not None:
        runtimes = [r for r in runtimes if cluster in (r.name, r.context)]
        if not runtimes:
            names = ", ".join(r.name for r in state.clusters if r.name != HOST)
            raise LoadError(f"no member cluster {cluster!r} in the fleet (clusters: {names})")
    until = time.time() + duration if duration else None
    done: list[LoadSet] = []
    for runtime in runtimes:
        api = api_client(state, runtime.context)
        try:
            core: Any = client.CoreV1Api(api)
            pods = _pods_of(core, app)
            if not pods:
                continue
            kind = pods[0].metadata.labels[LABEL_KIND]
            namespaces = {p.metadata.namespace for p in pods}
            patch = {"metadata": {"annotations": _annotations(namespaces, app, kind, usage,
                                                              until)}}
            nodes = core.list_node(label_selector="type=kwok").items
            for node in nodes:
                core.patch_node(node.metadata.name, patch)
            done.append(LoadSet(runtime.name, tuple(sorted(namespaces)), len(pods), len(nodes)))
        finally:
            api.close()
    if not done:
        where = f"cluster {cluster}" if cluster else "the fleet"
        raise LoadError(f"no pods of {app} run in {where}")
    return done
