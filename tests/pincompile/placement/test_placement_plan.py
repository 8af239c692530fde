"""Placement of every kind, the errors users see, and the stability properties."""

from __future__ import annotations

import itertools
import json
import random
from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from pincompile.parse import parse
from pincompile.placement import plan
from tests.support.placement import (
    app,
    cluster,
    doc,
    load,
    place,
    project,
    scaler,
    shards,
    template,
)

SETTINGS = settings(max_examples=100, deadline=None)


def three_zones(**extra: Any) -> list[str]:
    return [cluster("a1", zone="za", **extra), cluster("a2", zone="za", **extra),
            cluster("b1", zone="zb", **extra), cluster("c1", zone="zc", **extra)]


# --- services -----------------------------------------------------------------------------

def test_zone_spread_balances_zones_then_clusters() -> None:
    p, diags = place(project(), *three_zones(), app("web", replicas=10,
                                                    placement={"spread": "zone"}))
    assert not diags
    d = p.decision(("PinApp", "team", "web"))
    assert d is not None
    by_zone = d.replicas_by_zone()
    assert sum(by_zone.values()) == 10
    assert max(by_zone.values()) - min(by_zone.values()) <= 1
    assert sorted(by_zone.values()) == [3, 3, 4]
    # zone za's share is split over its two clusters (same capacity: evenly)
    za = [s.replicas for s in d.shards if s.zone == "za"]
    assert len(za) == 2 and max(za) - min(za) <= 1


def test_within_a_zone_replicas_follow_capacity() -> None:
    p, _ = place(project(), cluster("big", zone="za", cpu="300"),
                 cluster("small", zone="za", cpu="100"),
                 app("web", replicas=8, placement={"spread": "zone"}))
    assert shards(p, "PinApp", "web") == {"big": 6, "small": 2}


def test_cluster_spread_is_even_and_max_clusters_is_honoured() -> None:
    p, diags = place(project(), *three_zones(),
                     app("web", replicas=7, placement={"spread": "cluster", "maxClusters": 3}))
    assert not diags
    got = shards(p, "PinApp", "web")
    assert len(got) == 3 and sorted(got.values()) == [2, 2, 3]
    # zone-aware choice: three clusters in three different zones
    d = p.decision(("PinApp", "team", "web"))
    assert d is not None and len({s.zone for s in d.shards}) == 3
    assert d.notes == ["maxClusters 3: 3 of 4 eligible clusters used"]


def test_spread_none_uses_as_few_clusters_as_capacity_allows() -> None:
    p, diags = place(project(), *three_zones(cpu="4"),
                     app("web", replicas=6, placement={"spread": "none"}))
    assert not diags
    got = shards(p, "PinApp", "web")
    assert sorted(got.values()) == [2, 4]  # 4 cpu per cluster, 1 cpu per pod


def test_never_over_a_clusters_capacity() -> None:
    p, diags = place(project(), cluster("small", zone="za", cpu="2"),
                     cluster("big", zone="zb", cpu="100"),
                     app("web", replicas=10, placement={"spread": "zone"}))
    assert not diags
    assert shards(p, "PinApp", "web") == {"small": 2, "big": 8}
    d = p.decision(("PinApp", "team", "web"))
    assert d is not None
    assert d.notes == ["zones differ by more than one replica because a zone is full: "
                       "za=2, zb=8"]


def test_fewer_replicas_than_zones_uses_one_cluster_per_replica() -> None:
    p, _ = place(project(), *three_zones(), app("web", replicas=2))
    got = shards(p, "PinApp", "web")
    assert sorted(got.values()) == [1, 1]
    d = p.decision(("PinApp", "team", "web"))
    assert d is not None and len({s.zone for s in d.shards}) == 2


def test_not_enough_capacity_is_an_error_at_replicas() -> None:
    text = "\n".join([
        "apiVersion: pincompute.io/v1",
        "kind: PinApp",
        "metadata: {name: web, project: team}",
        "spec:",
        "  replicas: 9",
        "  placement: {maxClusters: 1}",
        "  rollout: {maxSurge: 0, maxUnavailable: 1}",
        "  template:",
        "    containers: [{name: m, image: 'r/x:1', resources: {cpu: '1'}}]",
    ])
    _, diags = place(project(), cluster("a", zone="za", cpu="4"),
                     cluster("b", zone="zb", cpu="4"), files={"apps/web.yaml": text})
    assert [(d.file, d.line, d.column, d.code) for d in diags] == [
        ("apps/web.yaml", 5, 13, "insufficient-capacity")]
    assert "needs replicas 9, but the capacity of its clusters holds only 4 of its pods" in (
        diags[0].message)
    assert diags[0].hint == "raise placement.maxClusters or widen placement"


def test_scaler_bounds_are_divided_like_replicas() -> None:
    p, diags = place(project(), *three_zones(),
                     app("web", replicas=6, placement={"spread": "zone"}),
                     scaler("web", "web", 6, 30))
    assert not diags
    d = p.decision(("PinApp", "team", "web"))
    assert d is not None
    mins = {s.cluster: s.min_replicas for s in d.shards}
    maxs = {s.cluster: s.max_replicas for s in d.shards}
    assert sum(mins.values()) == 6 and sum(maxs.values()) == 30  # type: ignore[arg-type]
    for s in d.shards:
        assert s.min_replicas is not None and s.max_replicas is not None
        assert 1 <= s.min_replicas <= s.replicas <= s.max_replicas
    zone_max: dict[str, int] = {}
    for s in d.shards:
        zone_max[s.zone] = zone_max.get(s.zone, 0) + (s.max_replicas or 0)
    assert sorted(zone_max.values()) == [10, 10, 10]
    assert p.scaler_targets == {("PinScaler", "team", "web"): ("PinApp", "team", "web")}


def test_scaler_min_below_clusters_still_gives_one_each() -> None:
    p, _ = place(project(), *three_zones(), app("web", replicas=1, placement={"spread": "cluster"}),
                 scaler("web", "web", 1, 8))
    d = p.decision(("PinApp", "team", "web"))
    assert d is not None and len(d.shards) == 4
    assert all(s.min_replicas == 1 for s in d.shards)
    assert sum(s.max_replicas or 0 for s in d.shards) == 8


@SETTINGS
@given(st.integers(1, 40), st.integers(0, 40), st.integers(1, 6),
       st.sampled_from(["zone", "cluster", "none"]), st.one_of(st.none(), st.integers(1, 4)))
def test_scaler_bounds_properties(low: int, extra: int, replicas: int, spread: str,
                                  max_clusters: int | None) -> None:
    high = low + extra
    placement: dict[str, Any] = {"spread": spread}
    if max_clusters:
        placement["maxClusters"] = max_clusters
    p, diags = place(project(), *three_zones(cpu="1000"),
                     app("web", replicas=replicas, placement=placement),
                     scaler("web", "web", low, high))
    assert not diags
    d = p.decision(("PinApp", "team", "web"))
    assert d is not None and d.shards
    n = len(d.shards)
    assert sum(s.max_replicas or 0 for s in d.shards) == high
    assert all(1 <= (s.min_replicas or 0) <= (s.max_replicas or 0) for s in d.shards)
    assert sum(s.min_replicas or 0 for s in d.shards) == max(low, n)
    assert max_clusters is None or n <= max_clusters


# --- single-cluster kinds, JobSets, daemons -----------------------------------------------

def test_training_job_lands_whole_in_one_cluster_with_the_addon() -> None:
    job = doc("PinterestTrainingJob", "train", {
        "framework": "pytorch", "replicas": {"master": 1, "worker": 3},
        "template": {**template(cpu="2", gpu=1), "gpuType": "A10G"}}, "team")
    p, diags = place(project(),
                     cluster("gpu-no-addon", gpus="8", gpuTypes=["A10G"]),
                     cluster("gpu-small", gpus="2", gpuTypes=["A10G"],
                             addons=["kubeflow-training"]),
                     cluster("gpu-ok", gpus="8", gpuTypes=["A10G"], addons=["kubeflow-training"]),
                     cluster("cpu-only", addons=["kubeflow-training"]), job)
    assert not diags
    d = p.decision(("PinterestTrainingJob", "team", "train"))
    assert d is not None
    assert [(s.cluster, s.replicas) for s in d.shards] == [("gpu-ok", 1)]
    assert d.filtered["gpu-no-addon"].startswith("addons: ")
    assert d.filtered["gpu-small"] == (
        "capacity: 4 pods need nvidia.com/gpu 4; the cluster's capacity is 2")
    assert d.filtered["cpu-only"].startswith("gpu-type: ")


def test_cron_job_runs_in_exactly_one_of_its_listed_clusters() -> None:
    cron = doc("PinterestCronJob", "nightly", {
        "schedule": "0 3 * * *", "template": template(),
        "placement": {"clusters": ["a1", "b1"]}}, "team")
    p, diags = place(project(), *three_zones(), cron)
    assert not diags
    got = shards(p, "PinterestCronJob", "nightly")
    assert list(got.values()) == [1] and set(got) <= {"a1", "b1"}


def test_pods_land_in_one_cluster() -> None:
    p, _ = place(project(), *three_zones(), doc("PinPod", "nb", template(), "team"))
    assert list(shards(p, "PinPod", "nb").values()) == [1]


def test_jobset_divide_splits_completions_into_contiguous_ranges() -> None:
    job = doc("PinterestJobSet", "index", {
        "completions": 1000, "parallelism": 50, "template": template(),
        "placement": {"divide": True}}, "team")
    p, diags = place(project(), *three_zones(), job)
    assert not diags
    d = p.decision(("PinterestJobSet", "team", "index"))
    assert d is not None and len(d.shards) == 4
    ranges = sorted((s.index_offset, s.index_offset + s.replicas) for s in d.shards)
    assert ranges[0][0] == 0 and ranges[-1][1] == 1000
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
    assert sum(s.parallelism or 0 for s in d.shards) == 50
    assert all(1 <= (s.parallelism or 0) <= s.replicas for s in d.shards)


@SETTINGS
@given(st.integers(1, 300), st.one_of(st.none(), st.integers(1, 60)))
def test_jobset_ranges_cover_every_index_exactly_once(completions: int,
                                                      parallelism: int | None) -> None:
    spec: dict[str, Any] = {"completions": completions, "template": template(),
                            "placement": {"divide": True}}
    if parallelism:
        spec["parallelism"] = parallelism
    p, diags = place(project(), *three_zones(cpu="1000"), doc("PinterestJobSet", "j", spec, "team"))
    assert not diags
    d = p.decision(("PinterestJobSet", "team", "j"))
    assert d is not None
    covered = sorted(i for s in d.shards for i in range(s.index_offset,
                                                        s.index_offset + s.replicas))
    assert covered == list(range(completions))
    assert sum(s.parallelism or 0 for s in d.shards) == min(parallelism or completions,
                                                            completions)


def test_jobset_without_divide_runs_in_one_cluster() -> None:
    job = doc("PinterestJobSet", "j", {"completions": 20, "parallelism": 5,
                                       "template": template()}, "team")
    p, _ = place(project(), *three_zones(), job)
    d = p.decision(("PinterestJobSet", "team", "j"))
    assert d is not None
    assert [(s.replicas, s.index_offset, s.parallelism) for s in d.shards] == [(20, 0, 5)]


def test_daemon_goes_to_every_eligible_cluster() -> None:
    daemon = doc("PinterestDaemon", "agent", {"template": template(cpu="100m")}, "team")
    p, _ = place(project(), *three_zones(), cluster("cordoned", schedulable=False), daemon)
    d = p.decision(("PinterestDaemon", "team", "agent"))
    assert d is not None
    assert [s.cluster for s in d.shards] == ["a1", "a2", "b1", "c1"]
    assert all(s.replicas == 0 for s in d.shards)


def test_sidecar_daemons() -> None:
    def daemon_sidecar(name: str, inject: str) -> str:
        return doc("PinterestSideCar", name, {"mode": "daemon", "inject": inject,
                                              "container": {"image": "r/agent:1"}})
    p, _ = place(project(), *three_zones(), cluster("cordoned", schedulable=False),
                 daemon_sidecar("metrics", "always"), daemon_sidecar("gpu-agent", "opt-in"),
                 doc("PinPod", "nb", {**template(), "sidecars": ["gpu-agent"]}, "team"))
    assert p.sidecar_daemons["metrics"] == ["a1", "a2", "b1", "c1"]
    assert p.sidecar_daemons["gpu-agent"] == shards_clusters(p)


def shards_clusters(p: Any) -> list[str]:
    d = p.decision(("PinPod", "team", "nb"))
    return [s.cluster for s in d.shards]


# --- errors -------------------------------------------------------------------------------

def test_no_eligible_cluster_lists_each_cluster_and_its_filter() -> None:
    text = "\n".join([
        "apiVersion: pincompute.io/v1",
        "kind: PinApp",
        "metadata: {name: web, project: team}",
        "spec:",
        "  tier: reserved",
        "  placement:",
        "    regions: [r1]",
        "  template:",
        "    containers: [{name: m, image: 'r/x:1'}]",
    ])
    p, diags = place(project(), cluster("a", region="r2"),
                     cluster("b", tiers=["ondemand"]), cluster("c", schedulable=False),
                     files={"apps/web.yaml": text})
    assert len(diags) == 1
    d = diags[0]
    assert (d.file, d.line, d.column, d.code) == ("apps/web.yaml", 7, 5, "no-eligible-cluster")
    assert d.message == (
        "no eligible cluster for PinApp 'web' (project team); "
        "a: region: region r2 is not in placement.regions [r1]; "
        "b: tier: tier reserved is not offered (cluster offers ondemand); "
        "c: schedulable: cluster is cordoned (schedulable: false)")
    decision = p.decision(("PinApp", "team", "web"))
    assert decision is not None and decision.shards == []


def test_no_eligible_cluster_without_placement_points_at_the_name() -> None:
    text = ("apiVersion: pincompute.io/v1\nkind: PinPod\nmetadata:\n  project: team\n"
            "  name: big\nspec:\n  containers: [{name: m, image: 'r/x:1', "
            "resources: {cpu: '100'}}]\n")
    _, diags = place(project(), cluster("a", cpu="8"), files={"pod.yaml": text})
    assert [(d.file, d.line, d.column, d.code) for d in diags] == [
        ("pod.yaml", 5, 9, "no-eligible-cluster")]
    assert diags[0].message.endswith(
        "a: capacity: one pod needs cpu 100; the cluster's capacity is 8")
    assert diags[0].hint is not None and "requests" in diags[0].hint


def test_names_no_cluster_has_are_left_to_the_reference_checks() -> None:
    """A typo in placement gets one precise error (unknown cluster/region/zone, from the
    reference checks), not a second, vaguer one from placement."""
    for placement in ({"clusters": ["a-typo"]}, {"regions": ["r9"]}, {"zones": ["z9"]}):
        p, diags = place(project(), cluster("a"), app("web", placement=placement))
        assert diags == []
        d = p.decision(("PinApp", "team", "web"))
        assert d is not None and d.shards == [] and d.eligible == []


def test_unknown_project_is_left_to_the_reference_checks() -> None:
    p, diags = place(project(), cluster("a"), app("web", project="nobody"))
    assert diags == [] and p.decisions == {}


def test_cluster_over_capacity_names_the_largest_consumers() -> None:
    c = "\n".join([
        "apiVersion: pincompute.io/v1",
        "kind: Cluster",
        "metadata: {name: only}",
        "spec:",
        "  region: r1",
        "  zone: z1",
        "  capacity:",
        "    cpu: '10'",
        "    memory: 1Ti",
    ])
    p, diags = place(project(), app("one", replicas=6), app("two", replicas=5),
                     files={"cluster.yaml": c})
    assert [(d.file, d.line, d.column, d.code) for d in diags] == [
        ("cluster.yaml", 8, 10, "cluster-over-capacity")]
    assert diags[0].message == (
        "cluster 'only' is over its capacity for cpu by 1: ondemand and reserved workloads "
        "placed here request 11 (HPA maximum for scaled apps, rollout surge included), the "
        "capacity is 10; largest cpu consumers: PinApp team/one 6 (doc1.yaml:1), PinApp "
        "team/two 5 (doc2.yaml:1)")
    # each app still gets its own placement: neither pushes the other around
    assert shards(p, "PinApp", "one") == {"only": 6}


# --- determinism and stability ------------------------------------------------------------

ZONES = ["za", "zb", "zc"]


@st.composite
def fleets(draw: st.DrawFn) -> list[str]:
    n = draw(st.integers(1, 5))
    return [cluster(f"c{i}", zone=draw(st.sampled_from(ZONES)),
                    cpu=draw(st.sampled_from(["8", "16", "64"])),
                    tiers=draw(st.sampled_from([["ondemand"], ["ondemand", "reserved"]])))
            for i in range(n)]


@st.composite
def apps(draw: st.DrawFn, name: str) -> str:
    kind = draw(st.sampled_from(["PinApp", "PinterestService", "PinPod", "PinterestJobSet"]))
    tier = draw(st.sampled_from(["ondemand", "reserved"]))
    if kind == "PinPod":
        return doc(kind, name, {**template(cpu="2"), "tier": tier}, "team")
    if kind == "PinterestJobSet":
        return doc(kind, name, {"completions": draw(st.integers(1, 50)), "tier": tier,
                                "parallelism": draw(st.integers(1, 10)),
                                "placement": {"divide": draw(st.booleans())},
                                "template": template(cpu="500m")}, "team")
    placement: dict[str, Any] = {"spread": draw(st.sampled_from(["zone", "cluster", "none"]))}
    if draw(st.booleans()):
        placement["maxClusters"] = draw(st.integers(1, 3))
    return app(name, kind=kind, replicas=draw(st.integers(0, 20)), tier=tier,
               placement=placement, pod=template(cpu=draw(st.sampled_from(["500m", "1", "3"]))))


def placements(p: Any) -> dict[Any, Any]:
    return {k: [s.to_json() for s in d.shards] for k, d in p.decisions.items()}


@SETTINGS
@given(fleets(), st.lists(st.integers(0, 10**6), min_size=1, max_size=1), st.data())
def test_placement_does_not_depend_on_file_or_document_order(
        fleet: list[str], seed: list[int], data: st.DataObject) -> None:
    workloads = [data.draw(apps(f"w{i}")) for i in range(data.draw(st.integers(1, 4)))]
    docs = [project(), *fleet, *workloads]
    files = {f"f{i}.yaml": text for i, text in enumerate(docs)}
    first = plan(parse(load(files=files))[0])
    names = list(files)
    random.Random(seed[0]).shuffle(names)
    again = plan(parse(load(files={n: files[n] for n in names}))[0])
    assert first[0].to_json() == again[0].to_json()
    assert first[1] == again[1]


@SETTINGS
@given(fleets(), st.data())
def test_adding_an_unrelated_app_changes_no_other_placement(fleet: list[str],
                                                            data: st.DataObject) -> None:
    workloads = [data.draw(apps(f"w{i}")) for i in range(data.draw(st.integers(1, 3)))]
    before, _ = place(project(), *fleet, *workloads)
    after, _ = place(project(), *fleet, *workloads, data.draw(apps("newcomer")))
    old = placements(before)
    new = placements(after)
    assert {k: new[k] for k in old} == old
    for key, decision in before.decisions.items():
        assert after.decisions[key].to_json() == decision.to_json()


@SETTINGS
@given(fleets(), st.data())
def test_adding_a_cluster_moves_at_most_the_share_it_takes(fleet: list[str],
                                                           data: st.DataObject) -> None:
    """Precisely, for each workload when cluster N joins the fleet:

    - single-cluster kinds stay where they were or move to N;
    - divided workloads (PinApp/PinterestService, divided JobSets) whose choice of clusters
      is not capped (no maxClusters, enough replicas for every eligible cluster): no old
      cluster gains, so the replicas that move are exactly N's share;
    - when the choice is capped, N may displace one cluster; then the clusters that keep
      the workload lose, together, at most N's share.
    """
    workloads = [data.draw(apps(f"w{i}")) for i in range(data.draw(st.integers(1, 3)))]
    newcomer = cluster("cnew", zone=data.draw(st.sampled_from([*ZONES, "znew"])),
                       cpu=data.draw(st.sampled_from(["8", "16", "64"])),
                       tiers=["ondemand", "reserved"])
    before, diags_before = place(project(), *fleet, *workloads)
    after, diags_after = place(project(), *fleet, newcomer, *workloads)
    if any(d.code == "insufficient-capacity" for d in diags_before + diags_after):
        event("skipped: a workload does not fit")
        return  # a workload that does not fit is an error either way
    specs = {json.loads(w)["metadata"]["name"]: json.loads(w)["spec"] for w in workloads}
    for key, old_decision in before.decisions.items():
        new_decision = after.decisions[key]
        old = {s.cluster: s.replicas for s in old_decision.shards}
        new = {s.cluster: s.replicas for s in new_decision.shards}
        taken = new.get("cnew", 0)
        placement = specs[key[2]].get("placement", {})
        if key[0] in ("PinPod", "PinterestCronJob", "PinterestTrainingJob") or (
                key[0] == "PinterestJobSet" and not placement.get("divide")):
            assert set(new) in (set(old), {"cnew"}, set())
            continue
        if not old or sum(old.values()) == 0:
            continue
        if key[0] == "PinterestJobSet":
            limit = min(specs[key[2]]["completions"], specs[key[2]]["parallelism"])
        elif placement.get("spread") == "none":
            limit = placement.get("maxClusters") or len(new_decision.eligible)
        else:
            limit = min(placement.get("maxClusters") or len(new_decision.eligible),
                        specs[key[2]]["replicas"])
        if limit >= len(new_decision.eligible):
            event("uncapped division checked")
            assert all(new.get(c, 0) <= old[c] for c in old), (old, new)
            assert sum(old[c] - new.get(c, 0) for c in old) == taken
        else:
            event("capped division checked")
            kept_loss = sum(max(0, old[c] - new[c]) for c in old if c in new)
            assert kept_loss <= taken, (old, new)


QUANTITIES = st.sampled_from(["0", "1m", "1", "1.", ".5", "+3", "1e3", "7E-2", "5n", "1Ei",
                              "1e300", "1e-300", "999999999999", "64Gi"])


@SETTINGS
@given(QUANTITIES, QUANTITIES, QUANTITIES, QUANTITIES, st.integers(0, 50),
       st.sampled_from(["zone", "cluster", "none"]), st.integers(0, 3))
def test_plan_never_raises_on_odd_quantities(cap_cpu: str, cap_mem: str, req_cpu: str,
                                             quota_cpu: str, replicas: int, spread: str,
                                             zero_cap: int) -> None:
    fleet = [cluster(f"c{i}", zone=f"z{i % 2}", cpu=cap_cpu if i != zero_cap else "0",
                     memory=cap_mem) for i in range(3)]
    quota = {"ondemand": {"cpu": quota_cpu, "memory": cap_mem}}
    docs = [project(quota=quota), *fleet,
            app("web", replicas=replicas, pod=template(cpu=req_cpu, memory="1Mi"),
                placement={"spread": spread}),
            scaler("web", "web", 1, replicas + 1),
            doc("PinterestJobSet", "j", {"completions": replicas + 1, "template":
                                         template(cpu=req_cpu), "placement": {"divide": True}},
                "team")]
    p, diags = place(*docs)
    assert isinstance(p.to_json(), dict)
    assert all(d.line >= 1 and d.column >= 1 for d in diags)
