"""What the reconciler's end-to-end modules share besides ``tests.conftest``'s fleet and
client helpers: a git repository of specs; another manager scaling a Deployment; watching an
app's status on the host."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import watch

from tests.support.git import git

__all__ = ["git", "host_status_follows", "scale_and_wait", "spec_repo"]


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
