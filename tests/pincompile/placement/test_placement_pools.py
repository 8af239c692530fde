"""A cluster's pools and what each tier asks of them: the one rule of the compile's
capacity check and the zone-loss simulation."""

from __future__ import annotations

from decimal import Decimal

from pincompile.placement.pools import pool_uses
from tests.support.placement import app, catalog, cluster, place, project, template


def test_the_reserved_pool_counts_reserved_and_the_rest_counts_both_tiers() -> None:
    pooled = catalog(cluster("a", cpu="64", memory="256Gi", reservedCapacity={"cpu": "48"})
                     ).clusters["a"].resource
    asked = {"reserved": {"cpu": Decimal(40), "memory": Decimal(10)},
             "ondemand": {"cpu": Decimal(20), "memory": Decimal(5)}}
    uses = {(u.pool, u.resource): (u.need, u.have, set(u.tiers))
            for u in pool_uses(pooled, asked)}
    assert uses == {
        ("reserved pool", "cpu"): (40, 48, {"reserved"}),
        ("capacity outside the reserved pool", "cpu"): (20, 16, {"ondemand"}),
        ("capacity outside the reserved pool", "memory"): (15, 256 * 2**30,
                                                           {"reserved", "ondemand"}),
    }
    only_reserved = {(u.pool, u.resource) for u in pool_uses(pooled, asked, {"reserved"})}
    assert only_reserved == {("reserved pool", "cpu"),
                             ("capacity outside the reserved pool", "memory")}


def test_two_reserved_apps_that_overfill_the_reserved_pool_are_an_error_there() -> None:
    pooled = cluster("a", cpu="64", reservedCapacity={"cpu": "48"})
    apps = [app(n, replicas=4, tier="reserved", pod=template(cpu="8"),
                placement={"spread": "none"}) for n in ("one", "two")]
    _, diags = place(pooled, project(), *apps)
    [d] = diags
    assert d.code == "cluster-over-capacity"
    assert d.message.startswith("cluster 'a' is over its reserved pool for cpu by 16: "
                                "reserved workloads placed here request 64")
    assert (d.file, d.line) == ("doc0.yaml", 1)  # JSON on one line: the reservedCapacity
    assert d.column > 1
