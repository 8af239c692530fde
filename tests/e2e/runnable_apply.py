"""Helpers of the ``test_runnable_*`` e2e tests: compile a spec tree, server-side apply its
objects to the fleet with the reconciler's write client (field manager ``pincompile``, the
reconciler's apply order), and watch pods.

These tests only prove that what ``validate`` accepts runs on real API servers and
schedulers; planning, pruning and rollout gates are the reconciler's e2e tests' business.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pincompile.compiler import compile_path
from pincompile.manifest import Manifest
from pincompile.pipeline import Result
from reconciler import kinds
from reconciler.clients import write
from reconciler.clients.connect import Connection
from tests.e2e import support

EXAMPLES = support.EXAMPLES
Kube = Callable[[str], Any]


def compile_tree(root: Path) -> Result:
    result = compile_path(root, revision="e2e")
    assert result.ok, "\n".join(f"{d.location()}: {d.code}: {d.message}"
                                for d in result.diagnostics)
    return result


def platform_copy(tmp: Path, *, clusters_only: bool = False) -> Path:
    """A spec tree with the fleet's Cluster specs (so names and contexts match the running
    fleet); without ``clusters_only`` all of the examples (as ``support.examples_copy``
    makes them: the same JobSet as the converge tests)."""
    root = tmp / "specs"
    if clusters_only:
        shutil.copytree(EXAMPLES / "platform" / "clusters", root / "platform" / "clusters")
        return root
    return support.examples_copy(root)


def by_cluster(manifests: Iterable[Manifest]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for m in manifests:
        out.setdefault(m.cluster, []).append(m.obj)
    for objs in out.values():
        objs.sort(key=lambda o: kinds.order(o["kind"]))
    return out


class Applier:
    """Server-side apply to one cluster of the fleet through the reconciler's write client."""

    def __init__(self, fleet: Any, context: str) -> None:
        self.conn = Connection(context, context, str(fleet.kubeconfig))

    def apply(self, obj: dict[str, Any]) -> Any:
        return write.apply(self.conn, obj)

    def apply_all(self, objs: Iterable[dict[str, Any]],
                  skip: Callable[[dict[str, Any]], bool] = lambda o: False) -> int:
        n = 0
        for obj in objs:
            if not skip(obj):
                self.apply(obj)
                n += 1
        return n


def deployment_rolled_out(apps: Any, namespace: str, name: str) -> bool:
    """The Deployment controller finished: every replica updated and available, no old
    ones left (what ``kubectl rollout status`` waits for)."""
    d = apps.read_namespaced_deployment(name, namespace)
    want = d.spec.replicas or 0
    st = d.status
    return bool((st.observed_generation or 0) >= d.metadata.generation
                and (st.updated_replicas or 0) == want and (st.replicas or 0) == want
                and (st.available_replicas or 0) == want)


def ready(pod: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def bump_images(root: Path) -> int:
    """Give every image of every workload spec under ``root/apps`` a new tag (digests are
    replaced by a tag); returns how many were changed."""
    count = 0
    pattern = re.compile(
        r"(image:\s*\"?)([^\s\"@:]+(?:/[^\s\"@:]+)*)(?::[\w.-]+|@sha256:[0-9a-f]+)")
    for path in sorted((root / "apps").rglob("*.yaml")):
        text = path.read_text()
        new, n = pattern.subn(lambda m: f"{m.group(1)}{m.group(2)}:e2e-bumped", text)
        count += n
        path.write_text(new)
    return count


def delete_namespaces(kube: Kube, contexts: Iterable[str], names: Iterable[str]) -> None:
    """Best-effort cleanup (the fleet is shared by the session)."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    for context in contexts:
        core: Any = client.CoreV1Api(kube(context))
        for name in names:
            try:
                core.delete_namespace(name, grace_period_seconds=0)
            except ApiException:
                continue
