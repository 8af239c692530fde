"""Losing each zone (or cluster) in turn: what moves, what the survivors cannot hold and
by how much, with the reconciler's own placement and failover rules."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from capacity_helpers import compiled, copy_fleet, set_cpu

from pincompile.capacity import counted_for, simulate
from pincompile.compiler import compile_path
from pincompile.contract import Manifest, place_without
from pincompile.models.types import parse_quantity
from reconciler.failover import LOST, ClusterState, arrange
from reconciler.model import Obj

WEB, API, BATCH, SCRATCH = (("PinApp", "shop", "web"), ("PinApp", "shop", "api"),
                            ("PinApp", "shop", "batch"), ("PinPod", "shop", "scratch"))


def test_losing_a_zone_moves_its_apps_and_strands_a_pinpod_without_failover(
        tmp_path: Path) -> None:
    report = simulate(compiled(copy_fleet(tmp_path)), "zone", ["reserved"])
    assert [(loss.name, loss.clusters) for loss in report.losses] == [
        ("za", ["a-1"]), ("zb", ["b-1"]), ("zc", ["c-1"])]
    za = report.losses[0]
    assert za.moved == [API, WEB]
    assert za.stranded == [SCRATCH]
    # reserved after losing za: web 6 + api 3 in each survivor, 1 cpu left of 10
    rooms = {(r.cluster, r.tier, r.resource): r for r in za.rooms}
    assert rooms[("b-1", "reserved", "cpu")].requested == 9
    assert rooms[("b-1", "reserved", "cpu")].free == 1
    assert za.tightest("reserved") is not None
    assert report.survives


def test_a_lower_tier_does_not_take_room_a_higher_tier_needs() -> None:
    assert counted_for("reserved") == {"reserved"}
    assert counted_for("ondemand") == {"reserved", "ondemand"}
    assert counted_for("preemptible") == {"reserved", "ondemand"}


def test_an_overfilled_pool_says_by_how_much_and_who_moved_there(tmp_path: Path) -> None:
    report = simulate(compiled(copy_fleet(tmp_path)), "zone", ["reserved", "ondemand"])
    za = report.losses[0]
    assert za.fits("reserved") and not za.fits("ondemand")
    over = {o.use.cluster: o for o in za.over}
    assert set(over) == {"b-1", "c-1"}
    b = over["b-1"]
    # ondemand counts reserved too: web 6 + api 3 + batch 2 = 11 of 10
    assert (b.tier, b.use.resource, b.use.need, b.use.have, b.use.over) == (
        "ondemand", "cpu", 11, 10, 1)
    assert b.movers == ((WEB, Decimal(2)), (API, Decimal(1)))
    assert not report.survives


def test_removing_capacity_breaks_the_reserved_tier_for_two_zones(tmp_path: Path) -> None:
    root = copy_fleet(tmp_path)
    set_cpu(root, "c-1", "8")
    report = simulate(compiled(root), "zone", ["reserved"])
    verdict = {loss.name: loss.fits("reserved") for loss in report.losses}
    assert verdict == {"za": False, "zb": False, "zc": True}
    [over] = [o for o in report.losses[0].over if o.tier == "reserved"]
    assert (over.use.cluster, over.use.need, over.use.have) == ("c-1", 9, 8)


def test_an_app_no_survivor_accepts_is_short_by_all_its_pods(tmp_path: Path) -> None:
    root = copy_fleet(tmp_path)
    web = (root / "apps" / "shop" / "web.yaml").read_text()
    (root / "apps" / "shop" / "cache.yaml").write_text(
        web.replace("name: web", "name: cache").replace("replicas: 12", "replicas: 2")
        .replace("{spread: zone}", "{zones: [za]}"))
    report = simulate(compiled(root), "zone", ["reserved"])
    [short] = report.losses[0].short
    assert (short.key, short.pods, short.placed) == (("PinApp", "shop", "cache"), 2, 0)
    assert short.missing == {"cpu": 2, "memory": 2 * 2**30, "pods": 2}
    assert short.why == ("no surviving cluster accepts it (b-1: zone: zone zb is not in "
                         "placement.zones [za]; c-1: zone: zone zc is not in placement.zones "
                         "[za])")
    assert [bool(loss.short) for loss in report.losses] == [True, False, False]


def test_losing_each_cluster_in_turn(tmp_path: Path) -> None:
    report = simulate(compiled(copy_fleet(tmp_path)), "cluster", ["reserved"])
    assert [(loss.domain, loss.name) for loss in report.losses] == [
        ("cluster", "a-1"), ("cluster", "b-1"), ("cluster", "c-1")]


def test_headroom_counts_what_placement_counts(tmp_path: Path) -> None:
    report = simulate(compiled(copy_fleet(tmp_path)), "zone")
    rooms = {(r.cluster, r.tier, r.resource): r for r in report.headroom}
    # b-1: web 4 + api 2 reserved, batch 2 ondemand, all in the shared capacity
    assert rooms[("b-1", "reserved", "cpu")].requested == 8
    assert rooms[("b-1", "ondemand", "cpu")].requested == 8
    # a-1 also runs the PinPod (500m): nothing preemptible, so spare = the same
    assert rooms[("a-1", "preemptible", "cpu")].free == Decimal("3.5")


def test_the_simulation_moves_apps_as_the_reconcilers_failover_does(tmp_path: Path) -> None:
    """Per surviving cluster, the cpu the reconciler's failover (``arrange``) asks for once
    a zone is lost (Deployments and Pods) is what the simulation counts there."""
    root = copy_fleet(tmp_path)
    expanded = compile_path(root, revision="x")
    normal = _by_cluster(expanded.manifests)
    for loss in simulate(compiled(root), "zone").losses:
        moved = _by_cluster(place_without(expanded, {c: "test" for c in loss.clusters})
                            .manifests)
        states = {c: ClusterState(c, phase=LOST, reason="test") for c in loss.clusters}
        desired = arrange(normal, moved, states, "25%").desired
        counted = {r.cluster: r.requested for r in loss.rooms
                   if r.tier == "ondemand" and r.resource == "cpu"}
        asked = {c: sum(map(_cpu, objs)) for c, objs in desired.items()
                 if c not in loss.clusters}
        assert asked == counted, loss.name


def _by_cluster(manifests: list[Manifest]) -> dict[str, list[Obj]]:
    out: dict[str, list[Obj]] = {}
    for m in manifests:
        out.setdefault(m.cluster, []).append(m.obj)
    return out


def _cpu(obj: Obj) -> Decimal:
    """The cpu a Deployment's replicas or a Pod request."""
    if obj["kind"] == "Deployment":
        pod, times = obj["spec"]["template"]["spec"], int(obj["spec"]["replicas"])
    elif obj["kind"] == "Pod":
        pod, times = obj["spec"], 1
    else:
        return Decimal(0)
    return times * sum((parse_quantity(c["resources"]["requests"]["cpu"])
                        for c in pod["containers"]), Decimal(0))
