"""What the platform compiles for a project works on real API servers and schedulers:

- a rollout of an app whose project quota is full at steady state plus surge completes
  (the ResourceQuota leaves the surge room);
- preemptible pods give way to a reserved app, and the buffer's placeholders to an ondemand
  app, through the real kube-scheduler's preemption.

Each test compiles a small spec tree of its own against the fleet's Cluster specs, in a
project namespace of its own, and deletes it afterwards.
"""

from __future__ import annotations

import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.runnable_apply import (
    Applier,
    Kube,
    bump_images,
    by_cluster,
    compile_tree,
    delete_namespaces,
    deployment_rolled_out,
    platform_copy,
    ready,
)
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e

RUNTIME = """\
apiVersion: pincompute.io/v1
kind: RuntimeProfile
metadata: {name: default}
spec:
  defaultResources: {cpu: 100m, memory: 64Mi}
"""


def _tree(tmp: Path, project: str, quota: str, apps: str, policy: str = "{}",
          cluster_patch: tuple[str, str] | None = None) -> Path:
    root = platform_copy(tmp, clusters_only=True)
    if cluster_patch is not None:
        path = root / "platform" / "clusters" / "us-west-2.yaml"
        old, new = cluster_patch
        assert old in path.read_text()
        path.write_text(path.read_text().replace(old, new, 1))
    (root / "platform" / "runtime.yaml").write_text(RUNTIME)
    (root / "platform" / "project.yaml").write_text(textwrap.dedent(f"""\
        apiVersion: pincompute.io/v1
        kind: Project
        metadata: {{name: {project}}}
        spec:
          owners: [team-e2e]
          quota: {quota}
          policy: {policy}
        """))
    (root / "apps" / project).mkdir(parents=True)
    (root / "apps" / project / "apps.yaml").write_text(textwrap.dedent(apps))
    return root


def _project() -> str:
    return f"e2e-{uuid.uuid4().hex[:6]}"


def _app(name: str, project: str, cluster: str, *, tier: str, replicas: int, cpu: str,
         memory: str, image: str = "registry.internal/e2e/app:1.0", surge: str = "25%") -> str:
    return f"""\
        ---
        apiVersion: pincompute.io/v1
        kind: PinApp
        metadata: {{name: {name}, project: {project}}}
        spec:
          replicas: {replicas}
          tier: {tier}
          placement: {{clusters: [{cluster}], spread: none}}
          rollout: {{maxSurge: "{surge}", maxUnavailable: 0}}
          template:
            containers:
              - {{name: main, image: "{image}", resources: {{cpu: "{cpu}", memory: {memory}}}}}
        """.rstrip(" ")


def _pods(core: Any, ns: str, app: str) -> list[Any]:
    return core.list_namespaced_pod(ns, label_selector=f"pincompute.io/app={app}").items


def test_rollout_completes_when_quota_is_full_at_steady_state_plus_surge(
        fleet: Any, kube: Kube, tmp_path: Path) -> None:
    from kubernetes import client

    project, cluster = _project(), "use1a-general-02"
    # 4 replicas x 1 cpu + ceil(25% of 4) = 1 surge pod: exactly 5 cpu, 5Gi
    root = _tree(tmp_path, project, '{ondemand: {cpu: "5", memory: 5Gi}}',
                 _app("web", project, cluster, tier="ondemand", replicas=4, cpu="1",
                      memory="1Gi"))
    objs = by_cluster(compile_tree(root).manifests)[cluster]
    quota = next(o for o in objs if o["kind"] == "ResourceQuota"
                 and o["metadata"]["name"] == "pincompute-ondemand")
    assert quota["spec"]["hard"]["requests.cpu"] == "5"
    apps: Any = client.AppsV1Api(kube(cluster))
    try:
        Applier(fleet, cluster).apply_all(objs)
        wait_for(lambda: deployment_rolled_out(apps, project, "web"), 120, "4 replicas available",
                 interval=1.0)
        bump_images(root)
        Applier(fleet, cluster).apply_all(by_cluster(compile_tree(root).manifests)[cluster])
        wait_for(lambda: deployment_rolled_out(apps, project, "web")
                 and apps.read_namespaced_deployment("web", project)
                 .spec.template.spec.containers[0].image.endswith(":e2e-bumped"), 120,
                 "the rollout to complete within the quota", interval=1.0)
        used = client.CoreV1Api(kube(cluster)).read_namespaced_resource_quota(
            "pincompute-ondemand", project).status.used
        assert used["requests.cpu"] == "4"
    finally:
        delete_namespaces(kube, [cluster], [project])


TIERS_QUOTA = ('{reserved: {cpu: "400", memory: 200Gi}, ondemand: {cpu: "400", memory: 200Gi},'
               ' preemptible: {cpu: "600", memory: 400Gi}}')
#: usw2a-general-01: 3 nodes of 128 cpu each in the fleet.
TIER_CLUSTER = "usw2a-general-01"


def test_reserved_app_preempts_preemptible_pods(fleet: Any, kube: Kube,
                                                tmp_path: Path) -> None:
    from kubernetes import client

    project = _project()
    # 6 preemptible pods of 60 cpu fill the 3 nodes (2 each); 3 reserved pods of 60 cpu can
    # only run by preempting one preemptible pod per node. validate accepts it: preemptible
    # pods use spare capacity and never block reserved ones.
    root = _tree(tmp_path, project, TIERS_QUOTA,
                 _app("filler", project, TIER_CLUSTER, tier="preemptible", replicas=6,
                      cpu="60", memory="1Gi")
                 + _app("critical", project, TIER_CLUSTER, tier="reserved", replicas=3,
                        cpu="60", memory="1Gi"))
    objs = by_cluster(compile_tree(root).manifests)[TIER_CLUSTER]
    apps: Any = client.AppsV1Api(kube(TIER_CLUSTER))
    core: Any = client.CoreV1Api(kube(TIER_CLUSTER))
    applier = Applier(fleet, TIER_CLUSTER)
    try:
        applier.apply_all(o for o in objs if o["metadata"]["name"] != "critical")
        wait_for(lambda: deployment_rolled_out(apps, project, "filler"), 120,
                 "6 preemptible pods running", interval=1.0)
        applier.apply_all(o for o in objs if o["metadata"]["name"] == "critical")
        wait_for(lambda: deployment_rolled_out(apps, project, "critical"), 180,
                 "the reserved app Ready by preempting", interval=1.0)
        assert all(ready(p) for p in _pods(core, project, "critical"))
        running = [p for p in _pods(core, project, "filler")
                   if p.spec.node_name and p.metadata.deletion_timestamp is None]
        assert len(running) == 3, [p.metadata.name for p in running]
        events = core.list_namespaced_event(project).items
        assert any(e.reason == "Preempted" for e in events)
    finally:
        delete_namespaces(kube, [TIER_CLUSTER], [project])
        wait_for(lambda: not core.list_namespaced_pod(project).items, 180,
                 "the tier test's pods to be gone", interval=1.0)


def test_buffer_placeholders_give_way_to_an_ondemand_app(fleet: Any, kube: Kube,
                                                         tmp_path: Path) -> None:
    from kubernetes import client

    project = _project()
    # a buffer of 3 placeholders of 100 cpu: one per node; the ondemand app's 3 pods of 60
    # cpu only fit by preempting them
    root = _tree(tmp_path, project, TIERS_QUOTA,
                 _app("burst", project, TIER_CLUSTER, tier="ondemand", replicas=3, cpu="60",
                      memory="1Gi"),
                 cluster_patch=("  addons: [pod-eni]",
                                "  addons: [pod-eni]\n"
                                "  buffer: {replicas: 3, cpu: \"100\", memory: 8Gi}"))
    objs = by_cluster(compile_tree(root).manifests)[TIER_CLUSTER]
    apps: Any = client.AppsV1Api(kube(TIER_CLUSTER))
    core: Any = client.CoreV1Api(kube(TIER_CLUSTER))
    applier = Applier(fleet, TIER_CLUSTER)
    try:
        applier.apply_all(o for o in objs if o["metadata"]["name"] != "burst")
        wait_for(lambda: deployment_rolled_out(apps, "pincompute-buffer", "buffer"), 120,
                 "3 buffer placeholders running", interval=1.0)
        applier.apply_all(o for o in objs if o["metadata"]["name"] == "burst")
        wait_for(lambda: deployment_rolled_out(apps, project, "burst"), 180,
                 "the ondemand app Ready in the buffer's room", interval=1.0)
        # two app pods may share a node, so at least two of the three placeholders gave way
        events = core.list_namespaced_event("pincompute-buffer").items
        assert len({e.involved_object.name for e in events if e.reason == "Preempted"}) >= 2
    finally:
        delete_namespaces(kube, [TIER_CLUSTER], [project, "pincompute-buffer"])
