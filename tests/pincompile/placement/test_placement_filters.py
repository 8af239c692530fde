"""Each filter plugin on its own, and the reasons users read in the decision."""

from __future__ import annotations

from typing import Any

import pytest

from pincompile.catalog import Catalog, Entry
from pincompile.models import Cluster, Workload
from pincompile.placement import filters as f
from pincompile.placement.context import (
    Context,
    cluster_capacity,
    pods_together,
    workload_requests,
)
from tests.support.placement import app, catalog, cluster, doc, place, project, template


def check(flt: f.Filter, workload_doc: str, cluster_doc: str, project_doc: str | None = None
          ) -> str | None:
    cat = catalog(project_doc or project(), cluster_doc, workload_doc)
    w: Entry[Workload] = cat.workloads[0]
    c: Entry[Cluster] = next(iter(cat.clusters.values()))
    ctx = context(cat, w)
    return flt.check(w, c, ctx)


def context(cat: Catalog, w: Entry[Workload]) -> Context:
    caps = {n: cluster_capacity(e.resource) for n, e in cat.clusters.items()}
    return Context(cat, cat.projects[w.resource.project], workload_requests(w, cat),
                   pods_together(w.resource), caps)


def pod(**extra: Any) -> str:
    return doc("PinPod", "p", {**template(), **extra}, "team")


def test_schedulable_removes_cordoned_clusters() -> None:
    assert check(f.Schedulable(), pod(), cluster("c", schedulable=False)) == (
        "cluster is cordoned (schedulable: false)")
    assert check(f.Schedulable(), pod(), cluster("c")) is None


def test_region_zone_and_cluster_names() -> None:
    c = cluster("c1", region="us-east-1", zone="us-east-1a")
    assert check(f.Region(), pod(placement={"regions": ["us-west-2"]}), c) == (
        "region us-east-1 is not in placement.regions [us-west-2]")
    assert check(f.Region(), pod(placement={"regions": ["us-east-1"]}), c) is None
    assert check(f.Zone(), pod(placement={"zones": ["us-east-1b"]}), c) == (
        "zone us-east-1a is not in placement.zones [us-east-1b]")
    assert check(f.Zone(), pod(placement={"zones": ["us-east-1a"]}), c) is None
    assert check(f.ClusterName(), pod(placement={"clusters": ["c2"]}), c) == (
        "not in placement.clusters [c2]")
    assert check(f.ClusterName(), pod(placement={"clusters": ["c1"]}), c) is None


def test_daemon_clusters_all_means_every_cluster() -> None:
    daemon = doc("PinterestDaemon", "d", {"template": template(), "placement": {"clusters": "all"}},
                 "team")
    assert check(f.ClusterName(), daemon, cluster("c1")) is None


def test_cluster_labels_missing_or_different() -> None:
    c = cluster("c", labels={"env": "prod"})
    assert check(f.ClusterLabels(), pod(placement={"clusterLabels": {"env": "prod"}}), c) is None
    assert check(f.ClusterLabels(), pod(placement={"clusterLabels": {"env": "dev"}}), c) == (
        "cluster has label env=prod, not dev (placement.clusterLabels)")
    assert check(f.ClusterLabels(), pod(placement={"clusterLabels": {"pool": "gpu"}}), c) == (
        "cluster lacks label pool=gpu (placement.clusterLabels)")


def test_tier_must_be_offered() -> None:
    c = cluster("c", tiers=["ondemand", "preemptible"])
    assert check(f.TierOffered(), pod(tier="reserved"), c) == (
        "tier reserved is not offered (cluster offers ondemand, preemptible)")
    assert check(f.TierOffered(), pod(tier="ondemand"), c) is None


def test_arch() -> None:
    assert check(f.Arch(), pod(arch="arm64"), cluster("c", arch=["amd64"])) == (
        "pod needs arch arm64; cluster has amd64")
    assert check(f.Arch(), pod(arch="arm64"), cluster("c", arch=["amd64", "arm64"])) is None
    assert check(f.Arch(), pod(), cluster("c", arch=["arm64"])) is None


def test_gpu_type_and_gpu_requests() -> None:
    gpu_pod = doc("PinPod", "p", {**template(gpu=1), "gpuType": "A10G"}, "team")
    assert check(f.GpuType(), gpu_pod, cluster("c", gpus="8", gpuTypes=["H100"])) == (
        "pod needs GPU type A10G; cluster offers H100")
    assert check(f.GpuType(), gpu_pod, cluster("c", gpus="8", gpuTypes=["A10G"])) is None
    any_gpu = doc("PinPod", "p", template(gpu=1), "team")
    assert check(f.GpuType(), any_gpu, cluster("c")) == (
        "pod requests GPUs; cluster offers no GPU types")


def test_training_jobs_need_the_kubeflow_addon() -> None:
    job = doc("PinterestTrainingJob", "t", {"framework": "pytorch",
                                            "replicas": {"master": 1, "worker": 2},
                                            "template": template()}, "team")
    assert check(f.Addons(), job, cluster("c", addons=["keda"])) == (
        "PinterestTrainingJob needs addon kubeflow-training; cluster has keda")
    assert check(f.Addons(), job, cluster("c", addons=["kubeflow-training"])) is None
    assert check(f.Addons(), pod(), cluster("c")) is None


def test_project_placement_limits() -> None:
    limited = project(placement={"regions": ["r2"]})
    assert check(f.ProjectPlacement(), pod(), cluster("c", region="r1"), limited) == (
        "project 'team' may run only in regions r2; cluster is in r1")
    assert check(f.ProjectPlacement(), pod(), cluster("c", region="r2"), limited) is None
    labelled = project(placement={"clusterLabels": {"env": "prod"}})
    assert check(f.ProjectPlacement(), pod(), cluster("c"), labelled) == (
        "project 'team' requires cluster labels; cluster lacks label env=prod")


def test_capacity_fit_counts_pods_that_run_together() -> None:
    small = cluster("c", cpu="8", memory="64Gi")
    assert check(f.CapacityFit(), pod(), small) is None
    big_pod = doc("PinPod", "p", template(cpu="16"), "team")
    assert check(f.CapacityFit(), big_pod, small) == (
        "one pod needs cpu 16; the cluster's capacity is 8")
    # a training job's replicas all land in one cluster: 5 pods x 2 cpu = 10 > 8
    job = doc("PinterestTrainingJob", "t", {"framework": "pytorch",
                                            "replicas": {"master": 1, "worker": 4},
                                            "template": template(cpu="2")}, "team")
    assert check(f.CapacityFit(), job, small) == (
        "5 pods need cpu 10; the cluster's capacity is 8")
    # an undivided JobSet needs its parallelism at once; a divided one one pod
    jobset = {"completions": 100, "parallelism": 10, "template": template(cpu="1")}
    assert check(f.CapacityFit(), doc("PinterestJobSet", "j", jobset, "team"), small) == (
        "10 pods need cpu 10; the cluster's capacity is 8")
    divided = {**jobset, "placement": {"divide": True}}
    assert check(f.CapacityFit(), doc("PinterestJobSet", "j", divided, "team"), small) is None
    # a pod asking for GPUs does not fit a cluster without GPU capacity
    assert check(f.CapacityFit(), doc("PinPod", "p", template(gpu=1), "team"), small) == (
        "one pod needs nvidia.com/gpu 1; the cluster has none")


def test_capacity_counts_injected_sidecars_and_init_containers() -> None:
    sidecar = doc("PinterestSideCar", "proxy", {
        "mode": "sidecar", "inject": "always",
        "container": {"image": "registry.internal/proxy:1.0", "resources": {"cpu": "1"}}})
    c = cluster("c", cpu="2")
    cat = catalog(project(), c, sidecar, doc("PinPod", "p", template(cpu="1500m"), "team"))
    w = cat.workloads[0]
    reason = f.CapacityFit().check(w, cat.clusters["c"], context(cat, w))
    assert reason == "one pod needs cpu 2500m; the cluster's capacity is 2"


def test_first_failing_filter_is_recorded_with_its_name() -> None:
    p, diags = place(project(), cluster("a", zone="z1", schedulable=False),
                     cluster("b", zone="z2", tiers=["reserved"]), cluster("c", zone="z3"),
                     app("web", replicas=2))
    d = p.decision(("PinApp", "team", "web"))
    assert d is not None and not diags
    assert d.eligible == ["c"]
    assert d.filtered == {
        "a": "schedulable: cluster is cordoned (schedulable: false)",
        "b": "tier: tier ondemand is not offered (cluster offers reserved)",
    }


@pytest.mark.parametrize("flt", f.FILTERS, ids=lambda x: x.name)
def test_every_filter_has_a_distinct_name(flt: f.Filter) -> None:
    assert [x.name for x in f.FILTERS].count(flt.name) == 1
