"""What the end-to-end tests share: a copy of the examples sized for the fleet, and one
PinApp (with its PinScaler) compiled for one member cluster and applied there."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from pincompile.compiler import compile_path
from pincompile.manifest import Manifest
from reconciler.fleet.clusters import ClusterSpec
from reconciler.fleet.nodes import GPU, parse_quantity

# --- the examples, with a smaller nightly index build ----------------------------------------
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
INDEXER = Path("apps") / "search" / "search-indexer.yaml"
#: shards of the examples' JobSet ``search-indexer`` in the e2e tests' copy: the examples run
#: 1000 (about 360 pods, each with its own volume, in each of three clusters; minutes of the
#: fleet's time on 2 cores). 150 keep what the tests rely on: divided over the same three
#: clusters, and each cluster's Job has more shards than it runs at once (several waves).
INDEXER_SHARDS = 150


def examples_copy(dest: Path) -> Path:
    """A copy of ``examples/`` at ``dest`` whose JobSet ``search-indexer`` runs at most
    :data:`INDEXER_SHARDS` shards (everything else as is)."""
    shutil.copytree(EXAMPLES, dest)
    path = dest / INDEXER
    text, found = re.subn(r"(?m)^  completions: (\d+)$",
                          lambda m: f"  completions: {min(int(m[1]), INDEXER_SHARDS)}",
                          path.read_text())
    assert found == 1, f"{INDEXER}: expected one spec.completions"
    path.write_text(text)
    return dest


# --- one PinApp (+ its PinScaler) compiled for one member cluster and applied there ---------
#: the kinds a compiled PinApp with a PinScaler makes, in the order they are applied
APPLY_ORDER = ("Namespace", "PriorityClass", "ResourceQuota", "Deployment",
               "PodDisruptionBudget", "HorizontalPodAutoscaler")


def project_and_app(project: str, app: str, cluster: str, image: str) -> str:
    """Spec text of a Project and its one-replica PinApp placed in ``cluster`` (a
    PinScaler document may follow)."""
    return f"""\
apiVersion: pincompute.io/v1
kind: Project
metadata: {{name: {project}}}
spec:
  owners: [e2e]
  quota:
    reserved: {{cpu: "8", memory: 16Gi}}
---
apiVersion: pincompute.io/v1
kind: PinApp
metadata: {{name: {app}, project: {project}}}
spec:
  replicas: 1
  tier: reserved
  placement: {{clusters: [{cluster}]}}
  template:
    containers:
      - name: main
        image: {image}
        resources: {{cpu: 100m, memory: 64Mi}}
"""


def general_cluster(specs: dict[str, ClusterSpec]) -> ClusterSpec:
    """A schedulable member cluster without GPUs (skips the test when there is none)."""
    for spec in specs.values():
        if spec.schedulable and parse_quantity(spec.capacity.get(GPU, "0")) == 0:
            return spec
    pytest.skip("the fleet has no schedulable general cluster")


def write_clusters(clusters_path: str | Path, root: Path) -> None:
    """``root/platform/clusters.yaml``: the Cluster documents of the fleet's specs."""
    (root / "platform").mkdir(parents=True)
    path = Path(clusters_path)
    files = sorted(path.rglob("*.yaml")) if path.is_dir() else [path]
    yaml = YAML(typ="safe")
    documents = [d for f in files for d in yaml.load_all(f.read_text())
                 if isinstance(d, dict) and d.get("kind") == "Cluster"]
    with open(root / "platform" / "clusters.yaml", "w") as out:
        YAML().dump_all(documents, out)


def compile_for(clusters_path: str | Path, cluster: str, specs: str, root: Path
                ) -> list[Manifest]:
    """The objects ``pincompile compile`` makes of ``specs`` (the Project and its apps, in
    one file of the platform folder, which may hold both) with the fleet's Cluster specs,
    for ``cluster``, in :data:`APPLY_ORDER`."""
    write_clusters(clusters_path, root)
    (root / "platform" / "app.yaml").write_text(specs)
    result = compile_path(root, revision="e2e")
    assert result.ok, [str(d) for d in result.diagnostics]
    mine = [m for m in result.manifests if m.cluster == cluster and m.kind in APPLY_ORDER]
    return sorted(mine, key=lambda m: APPLY_ORDER.index(m.kind))


def server_side_apply(api: Any, obj: dict[str, Any]) -> None:
    """Server-side apply ``obj`` through ``api`` (a kubernetes ApiClient) as the e2e tests'
    field manager."""
    from kubernetes import dynamic

    resource = dynamic.DynamicClient(api).resources.get(api_version=obj["apiVersion"],
                                                        kind=obj["kind"])
    resource.server_side_apply(body=obj, namespace=obj["metadata"].get("namespace"),
                               field_manager="pincompile-e2e", force_conflicts=True)


def apply_all(api: Any, manifests: list[Manifest],
              change: Callable[[Manifest], dict[str, Any]] | None = None) -> list[str]:
    """Apply ``manifests`` in order (each as ``change`` makes it, if given); a PriorityClass
    is shared by the cluster's apps, so it is created only when absent. The names of the
    PriorityClasses created (for the test to delete)."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    scheduling: Any = client.SchedulingV1Api(api)
    created = []
    for manifest in manifests:
        if manifest.kind == "PriorityClass":
            try:
                scheduling.create_priority_class(manifest.obj)
                created.append(manifest.name)
            except ApiException as exc:
                if exc.status != 409:
                    raise
            continue
        server_side_apply(api, change(manifest) if change else manifest.obj)
    return created
