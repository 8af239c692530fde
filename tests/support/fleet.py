"""What the end-to-end modules share besides ``tests.conftest``'s fleets and client
helpers: a git repository of specs; another manager scaling a Deployment; watching an app's
status on the host; a fleet's controller timers; a fleet made as new again."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import watch

from pincompile.manifest import MANAGED_BY, MANAGED_BY_VALUE
from reconciler.fleet import fleet as fleet_mod
from reconciler.fleet.state import FleetState
from tests.support.git import git
from tests.support.wait import wait_for

__all__ = ["git", "host_status_follows", "reset", "scale_and_wait", "spec_repo", "timer"]


def spec_repo(source: Path, path: Path) -> Path:
    """A git repository at ``path`` holding a copy of ``source``, committed."""
    shutil.copytree(source, path)
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "initial")
    return path


def scale_and_wait(member: k8s.ApiClient, namespace: str, name: str, replicas: int) -> None:
    """Another manager scales Deployment ``name``; returns once that many pods are ready
    (watched, at most 90 s)."""
    apps = k8s.AppsV1Api(member)
    apps.patch_namespaced_deployment_scale(name, namespace, {"spec": {"replicas": replicas}},
                                           field_manager="e2e-operator")
    stream = watch.Watch()
    for event in stream.stream(apps.list_namespaced_deployment, namespace,
                               field_selector=f"metadata.name={name}", timeout_seconds=90):
        if (event["object"].status.ready_replicas or 0) == replicas:
            stream.stop()
            return
    pytest.fail(f"{namespace}/{name} never had {replicas} ready pods")


def host_status_follows(host: k8s.ApiClient, plural: str, namespace: str, name: str,
                        want: Callable[[dict[str, Any]], bool], timeout: float) -> float:
    """Seconds until the app's status on the host satisfies ``want`` (watched); fails after
    ``timeout``."""
    custom = k8s.CustomObjectsApi(host)
    started = time.monotonic()
    stream = watch.Watch()
    for event in stream.stream(custom.list_namespaced_custom_object, "pincompute.io", "v1",
                               namespace, plural, field_selector=f"metadata.name={name}",
                               timeout_seconds=int(timeout)):
        if want(event["object"].get("status") or {}):
            stream.stop()
            return time.monotonic() - started
    pytest.fail(f"{namespace}/{name}'s host status did not follow within {timeout:.0f}s")


# --- the fleet itself: its controller timers, and a fleet made as new again ---------------
#: Kubernetes' own values of the timers a fleet profile may shorten (seconds)
KUBERNETES_TIMERS = {"hpa_sync_seconds": 15, "hpa_downscale_seconds": 300,
                     "node_grace_seconds": 50, "metric_resolution_seconds": 15,
                     "node_lease_seconds": 40, "eviction_seconds": 300}
#: namespaces each cluster had right after ``fleet up``, per fleet directory
_FRESH: dict[Path, dict[str, set[str]]] = {}


def timer(fleet: FleetState, name: str) -> float:
    """One controller timer of ``fleet`` (a :data:`KUBERNETES_TIMERS` name), in seconds:
    its profile's (``fleet.timers``), or Kubernetes' own when the profile keeps it."""
    value = getattr(getattr(fleet, "timers", None), name, None)
    return float(KUBERNETES_TIMERS[name] if value is None else value)


def reset(fleet: FleetState, timeout: float = 180.0) -> None:
    """Make ``fleet`` as ``fleet up`` left it: every namespace made since deleted (and
    gone: one of the same name can then be created), the PriorityClasses pincompile made
    and, on the host, the cluster-wide pincompute.io resources removed. The first call
    only notes each cluster's namespaces."""
    from kubernetes import client

    apis = {r.context: fleet_mod.api_client(fleet, r.context) for r in fleet.clusters}
    try:
        names = {c: {n.metadata.name for n in client.CoreV1Api(api).list_namespace().items}
                 for c, api in apis.items()}
        fresh = _FRESH.setdefault(fleet.dir, names)
        made = {c: found - fresh.get(c, set()) for c, found in names.items()}
        for context, api in apis.items():
            _clear(api, made[context], host=context == fleet_mod.HOST)

        def gone() -> bool:
            return all(not made[c] & {n.metadata.name for n in client.CoreV1Api(api)
                                      .list_namespace().items} for c, api in apis.items())

        wait_for(gone, timeout, f"the namespaces tests made to be gone: {made}",
                 interval=0.5)
    finally:
        for api in apis.values():
            api.close()


def _clear(api: k8s.ApiClient, namespaces: set[str], *, host: bool) -> None:
    from kubernetes.client.rest import ApiException

    core, scheduling = k8s.CoreV1Api(api), k8s.SchedulingV1Api(api)
    for name in namespaces:
        try:
            core.delete_namespace(name)
        except ApiException as exc:
            if exc.status not in (404, 409):
                raise
    scheduling.delete_collection_priority_class(
        label_selector=f"{MANAGED_BY}={MANAGED_BY_VALUE}")
    if not host:
        return
    custom = k8s.CustomObjectsApi(api)
    for crd in k8s.ApiextensionsV1Api(api).list_custom_resource_definition().items:
        if crd.spec.group == "pincompute.io" and crd.spec.scope == "Cluster":
            version = next(v.name for v in crd.spec.versions if v.storage)
            custom.delete_collection_cluster_custom_object(crd.spec.group, version,
                                                           crd.spec.names.plural)
