"""Rendezvous sharding of member clusters."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reconciler.serve.metrics import Metrics
from reconciler.serve.service import Service
from reconciler.serve.shards import assign, shard_of

FLEET = ["use1a-general-01", "use1a-general-02", "use1b-general-01", "use1c-gpu-01",
         "usw2a-general-01", "usw2a-staging-01"]
names = st.lists(st.text("abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=20),
                 unique=True, max_size=40)


def test_two_shards_cover_every_cluster_exactly_once() -> None:
    shards = assign(FLEET, 2)
    assert set(shards) == {0, 1}
    assert shards[0] | shards[1] == set(FLEET)
    assert not shards[0] & shards[1]
    assert shards[0] and shards[1], "six clusters should not all land on one shard"


@given(names, st.integers(1, 8))
def test_any_shard_count_partitions_the_clusters(clusters: list[str], n: int) -> None:
    shards = assign(clusters, n)
    assert sorted(c for members in shards.values() for c in members) == sorted(clusters)


@given(names, st.integers(1, 7))
def test_adding_a_shard_moves_clusters_only_to_the_new_shard(clusters: list[str], n: int
                                                             ) -> None:
    for cluster in clusters:
        before, after = shard_of(cluster, n), shard_of(cluster, n + 1)
        assert after in (before, n)


def test_every_process_computes_the_same_assignment() -> None:
    assert assign(reversed(FLEET), 3) == assign(FLEET, 3)
    assert [shard_of(c, 3) for c in FLEET] == [shard_of(c, 3) for c in FLEET]


def test_the_canary_probes_what_this_replica_reconciles_and_nothing_on_a_standby() -> None:
    service = Service(None, lambda _scope, _clock: None, Metrics(), shards=2)  # type: ignore[arg-type]
    assert service.probed(FLEET) == frozenset(FLEET)  # leading both shards
    service.set_leading_shards(frozenset({1}))
    assert service.probed(FLEET) == frozenset(assign(FLEET, 2)[1])
    service.set_leading_shards(frozenset())
    assert service.probed(FLEET) is None
