"""Quota per project and tier: what counts, the errors (exact locations), the per-cluster
ResourceQuota sizes."""

from __future__ import annotations

from decimal import Decimal

from pincompile.diagnostics import Diagnostic
from tests.support.placement import app, cluster, doc, place, project, scaler, template

PROJECT = "\n".join([
    "apiVersion: pincompute.io/v1",
    "kind: Project",
    "metadata: {name: team}",
    "spec:",
    "  quota:",
    '    reserved: {cpu: "10", memory: 64Gi}',
    "    ondemand:",
    '      cpu: "4"',
    "      memory: 8Gi",
])

WEB = "\n".join([
    "apiVersion: pincompute.io/v1",
    "kind: PinApp",
    "metadata:",
    "  name: web",
    "  project: team",
    "spec:",
    "  replicas: 4",
    "  tier: reserved",
    "  rollout: {maxSurge: 0, maxUnavailable: 1}",
    "  template:",
    "    containers: [{name: m, image: 'r/web:1', resources: {cpu: '2', memory: 1Gi}}]",
])

PROXY = doc("PinterestSideCar", "proxy", {
    "mode": "sidecar", "inject": "always",
    "container": {"image": "r/proxy:1", "resources": {"cpu": "100m", "memory": "64Mi"}}})


def column_of(text: str, line: int, needle: str) -> int:
    return text.splitlines()[line - 1].index(needle) + 1


def only(diags: list[Diagnostic], code: str) -> list[Diagnostic]:
    return [d for d in diags if d.code == code]


def test_within_quota_is_fine() -> None:
    _, diags = place(cluster("a"), PROXY, files={"platform/team.yaml": PROJECT,
                                                 "apps/web.yaml": WEB})
    assert diags == []  # 4 x (2 + 0.1) = 8.4 cpu <= 10


def test_scaler_max_and_injected_sidecars_count_against_quota() -> None:
    pod = doc("PinPod", "notebook", {**template(cpu="500m"), "tier": "reserved"}, "team")
    _, diags = place(cluster("a", cpu="1000"), PROXY, scaler("web", "web", 2, 6), pod,
                     files={"platform/team.yaml": PROJECT, "apps/web.yaml": WEB})
    [d] = only(diags, "quota-exceeded")
    assert (d.file, d.line, d.column) == ("platform/team.yaml", 6, column_of(PROJECT, 6, '"10"'))
    # 6 (maxReplicas) x 2.1 + 1 x 0.6 = 13.2 cpu against 10
    assert d.message == (
        "project 'team' is over its reserved quota for cpu by 3200m: its reserved workloads "
        "request 13200m, the quota is 10; largest cpu consumers: PinApp web 12600m "
        "(apps/web.yaml:4), PinPod notebook 600m (doc3.yaml:1)")
    assert d.hint is not None and "spec.quota.reserved.cpu" in d.hint


def test_a_missing_tier_allows_nothing() -> None:
    job = "\n".join([
        "apiVersion: pincompute.io/v1",
        "kind: PinterestJobSet",
        "metadata: {name: crunch, project: team}",
        "spec:",
        "  completions: 100",
        "  parallelism: 5",
        "  tier: preemptible",
        "  template:",
        "    containers: [{name: m, image: 'r/c:1', resources: {cpu: '1', memory: 2Gi}}]",
    ])
    _, diags = place(cluster("a"), files={"platform/team.yaml": PROJECT, "apps/job.yaml": job})
    [d] = only(diags, "quota-exceeded")
    assert (d.file, d.line, d.column) == ("platform/team.yaml", 6, 5)  # spec.quota
    # the JobSet counts its parallelism (5 pods at once), not its completions
    assert d.message == (
        "project 'team' has no preemptible quota (a missing tier allows nothing), but its "
        "preemptible workloads request cpu 5, memory 10Gi, pods 5; largest cpu consumers: "
        "PinterestJobSet crunch 5 (apps/job.yaml:3)")


def test_a_resource_missing_from_a_tier_means_zero_gpus() -> None:
    gpu_pod = doc("PinPod", "cuda", {**template(cpu="1", gpu=1)}, "team")
    _, diags = place(cluster("g", gpus="4", gpuTypes=["A10G"]),
                     files={"platform/team.yaml": PROJECT, "apps/cuda.yaml": gpu_pod})
    [d] = only(diags, "quota-exceeded")
    assert (d.file, d.line, d.column) == ("platform/team.yaml", 8, 7)  # quota.ondemand
    assert d.message.startswith(
        "project 'team' is over its ondemand quota for nvidia.com/gpu by 1: its ondemand "
        "workloads request 1, the quota is 0 (not listed, so 0); largest nvidia.com/gpu "
        "consumers: PinPod cuda 1")


def test_init_containers_and_stopped_apps_count() -> None:
    runtime = doc("RuntimeProfile", "default", {"initContainers": [
        {"name": "sync", "image": "r/sync:1", "resources": {"cpu": "3"}}]})
    stopped = app("idle", replicas=2, pod=template(cpu="1"), stopped=True)
    _, diags = place(cluster("a"), runtime, stopped, files={"platform/team.yaml": PROJECT})
    [d] = only(diags, "quota-exceeded")
    # the init container (3 cpu) is larger than the pod's containers (1 cpu): 2 x 3 = 6 > 4
    assert "its ondemand workloads request 6, the quota is 4" in d.message


def test_per_cluster_quota_is_the_clusters_share_of_the_project_quota() -> None:
    p, diags = place(
        project(quota={"reserved": {"cpu": "30", "memory": "60Gi"},
                       "ondemand": {"cpu": "8", "memory": "8Gi", "pods": "20"}}),
        cluster("a", zone="za"), cluster("b", zone="zb"), cluster("c", zone="zc"),
        app("web", replicas=6, tier="reserved", pod=template(cpu="2", memory="4Gi"),
            placement={"zones": ["za", "zb"], "spread": "zone"}),
        doc("PinPod", "nb", {**template(cpu="1", memory="1Gi"), "tier": "ondemand",
                             "placement": {"clusters": ["c"]}}, "team"))
    assert diags == []
    assert sorted(p.quotas) == [("team", t, c) for t in ("ondemand", "preemptible", "reserved")
                                for c in ("a", "b", "c")]
    assert p.quotas[("team", "reserved", "a")] == {
        "cpu": Decimal(15), "memory": Decimal(30 * 2**30), "nvidia.com/gpu": Decimal(0)}
    assert p.quotas[("team", "reserved", "c")]["cpu"] == 0  # nothing reserved placed there
    assert p.quotas[("team", "ondemand", "c")] == {
        "cpu": Decimal(8), "memory": Decimal(8 * 2**30), "nvidia.com/gpu": Decimal(0),
        "pods": Decimal(20)}
    assert p.quotas[("team", "preemptible", "a")] == {
        "cpu": Decimal(0), "memory": Decimal(0), "nvidia.com/gpu": Decimal(0)}
    for tier in ("reserved", "ondemand"):
        total = sum(p.quotas[("team", tier, c)]["cpu"] for c in "abc")
        assert total == {"reserved": 30, "ondemand": 8}[tier]


def test_uneven_shares_add_up_to_the_quota_and_cover_usage() -> None:
    p, diags = place(
        project(quota={"ondemand": {"cpu": "10", "memory": "10Gi"}}),
        cluster("a", zone="za"), cluster("b", zone="zb"), cluster("c", zone="zc"),
        app("web", replicas=7, pod=template(cpu="1", memory="1Gi"),
            placement={"spread": "zone"}))
    assert diags == []
    shares = {c: p.quotas[("team", "ondemand", c)] for c in "abc"}
    placed = {s.cluster: s.replicas for s in p.decisions[("PinApp", "team", "web")].shards}
    assert sum(s["cpu"] for s in shares.values()) == 10
    assert sum(s["memory"] for s in shares.values()) <= 10 * 2**30
    for c, n in placed.items():
        assert shares[c]["cpu"] >= n and shares[c]["memory"] >= n * 2**30


def test_quotas_in_placement_json_are_formatted() -> None:
    p, _ = place(project(quota={"ondemand": {"cpu": "1500m", "memory": "3Gi"}}),
                 cluster("a"), app("web", replicas=1, pod=template(cpu="1", memory="1Gi")))
    assert p.to_json()["quotas"]["team"]["a"]["ondemand"] == {
        "cpu": "1500m", "memory": "3Gi", "nvidia.com/gpu": "0"}
