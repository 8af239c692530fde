"""The tiny spec repository of the diff and git-source tests (a git ``Repo`` that commits
files), and a stand-in expansion."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.git import git

CLUSTERS = """\
apiVersion: pincompute.io/v1
kind: Cluster
metadata: {name: east-a}
spec:
  region: us-east-1
  zone: us-east-1a
  capacity: {cpu: "64", memory: 256Gi}
---
apiVersion: pincompute.io/v1
kind: Cluster
metadata: {name: east-b}
spec:
  region: us-east-1
  zone: us-east-1b
  capacity: {cpu: "64", memory: 256Gi}
"""

PROJECT = """\
apiVersion: pincompute.io/v1
kind: Project
metadata: {name: shop}
spec:
  owners: [team-shop]
  quota:
    ondemand: {cpu: "32", memory: 64Gi}
"""

RUNTIME = """\
apiVersion: pincompute.io/v1
kind: RuntimeProfile
metadata: {name: default}
spec:
  env:
    - {name: PINCOMPUTE_PROJECT, value: "{{ app.project }}"}
"""

CART = """\
apiVersion: pincompute.io/v1
kind: PinApp
metadata:
  name: cart
  project: shop
  labels: {team: shop}
spec:
  replicas: 2
  template:
    containers:
      - name: main
        image: registry.internal/shop/cart:1.0.0
        resources: {cpu: 500m, memory: 1Gi}
"""

#: Commit 2 of the brief: more replicas and one more label.
CART_V2 = CART.replace("replicas: 2", "replicas: 4").replace(
    "labels: {team: shop}", "labels: {team: shop, tier-1: \"true\"}")

#: The same spec as CART, reformatted: keys reordered, flow style changed, comments added.
CART_REFORMATTED = """\
# the cart service (reformatted; nothing about it changes)
kind: PinApp
apiVersion: pincompute.io/v1
metadata:
  project: shop
  name: cart
  labels:
    team: shop        # owning team
spec:
  template:
    containers:
      - resources: {memory: 1Gi, cpu: 500m}
        image: registry.internal/shop/cart:1.0.0
        name: main
  replicas: 2
"""

FILES = {
    "platform/clusters.yaml": CLUSTERS,
    "platform/project.yaml": PROJECT,
    "platform/runtime.yaml": RUNTIME,
    "apps/shop/cart.yaml": CART,
}

class Repo:
    """A throwaway git repository."""

    def __init__(self, root: Path):
        self.root = root

    def git(self, *args: str) -> str:
        return git(self.root, *args)

    def write(self, files: dict[str, str | None]) -> None:
        """Write (or, for None, delete) files relative to the repository root."""
        for rel, text in files.items():
            path = self.root / rel
            if text is None:
                path.unlink()
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")

    def commit(self, files: dict[str, str | None], message: str) -> str:
        self.write(files)
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD")


def toy_expand(catalog: Any, revision: str) -> list[Any]:
    """A stand-in expansion for testing the command's plumbing without the real one: per
    PinApp and cluster one Deployment (replicas split over clusters), and per project and
    cluster one Namespace; every object carries the revision annotation."""
    from pincompile.manifest import Manifest

    clusters = sorted(catalog.clusters)
    out: list[Manifest] = []
    for cluster in clusters:
        for name, project in catalog.projects.items():
            out.append(Manifest(cluster, {
                "apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": project.resource.namespace,
                             "labels": {"pincompute.io/project": name}},
            }))
    for entry in catalog.workloads:
        app = entry.resource
        for i, cluster in enumerate(clusters):
            share = app.spec.replicas // len(clusters) + (i < app.spec.replicas % len(clusters))
            out.append(Manifest(cluster, {
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {
                    "name": app.name, "namespace": app.project,
                    "labels": {**app.metadata.labels, "pincompute.io/app": app.name},
                    "annotations": {"pincompute.io/revision": revision,
                                    "pincompute.io/source": entry.file},
                },
                "spec": {"replicas": share, "template": {"spec": {"containers": [
                    {"name": c.name, "image": c.image} for c in app.spec.template.containers
                ]}}},
            }))
    return out
