"""An app's health is the worst of its objects', named by object and cluster."""

from __future__ import annotations

import itertools

from reconciler.health import ORDER, aggregate, rank, summary
from reconciler.model import Health, ObjectRef, Phase


def ref(cluster: str, kind: str = "Deployment", name: str = "search-api") -> ObjectRef:
    return ObjectRef(cluster, "apps/v1", kind, "search", name)


def test_order_covers_every_phase_once_best_first() -> None:
    assert sorted(ORDER, key=rank) == list(ORDER)
    assert set(ORDER) == set(Phase) and len(ORDER) == len(Phase)
    assert ORDER[0] is Phase.HEALTHY
    # a known fault outranks what an unreachable cluster might hold; terminal beats transient
    assert rank(Phase.MISSING) < rank(Phase.UNKNOWN) < rank(Phase.DEGRADED) \
        < rank(Phase.FAILED)
    assert rank(Phase.SUSPENDED) < rank(Phase.PROGRESSING)


def test_worst_wins_whatever_the_order_of_the_objects() -> None:
    healths = [Health(p, f"why {p}") for p in ORDER]
    for perm in itertools.permutations(healths):
        assert aggregate(perm) == Health(Phase.FAILED, f"why {Phase.FAILED}")


def test_nothing_or_only_healthy_is_plainly_healthy() -> None:
    assert aggregate([]) == Health(Phase.HEALTHY)
    assert aggregate([Health(Phase.HEALTHY, "at max replicas"), None]) == Health(Phase.HEALTHY)
    assert aggregate([(ref("c1"), None)]) == Health(Phase.HEALTHY)


def test_no_opinion_counts_as_healthy() -> None:
    assert aggregate([None, Health(Phase.PROGRESSING, "1 of 3 updated"), None]) == Health(
        Phase.PROGRESSING, "1 of 3 updated")


def test_message_names_the_worst_object_and_its_cluster() -> None:
    app = [
        (ref("use1a-general-01"), Health(Phase.HEALTHY)),
        (ref("use1a-general-02", "PodDisruptionBudget"), Health(Phase.PROGRESSING, "1 of 2")),
        (ref("use1b-general-01"), Health(
            Phase.DEGRADED, 'ReplicaSet "search-api-6f7d" has timed out progressing.')),
        (ref("use1c-gpu-01", "HorizontalPodAutoscaler"), Health(Phase.SUSPENDED, "zero")),
    ]
    health = aggregate(app)
    assert health == Health(Phase.DEGRADED, 'Deployment/search/search-api in use1b-general-01: '
                                            'ReplicaSet "search-api-6f7d" has timed out '
                                            'progressing.')
    assert summary(health) == ('Degraded: Deployment/search/search-api in use1b-general-01: '
                               'ReplicaSet "search-api-6f7d" has timed out progressing.')


def test_first_of_equally_bad_objects_is_named() -> None:
    bad = Health(Phase.DEGRADED, "crash loop")
    assert aggregate([(ref("c2"), bad), (ref("c1"), bad)]).message \
        == "Deployment/search/search-api in c2: crash loop"


def test_plain_string_refs_and_messageless_health() -> None:
    assert aggregate([("cluster use1a-general-02", Health(Phase.UNKNOWN, "connection refused")),
                      ("Job/search/x", Health(Phase.PROGRESSING))]) == Health(
        Phase.UNKNOWN, "cluster use1a-general-02: connection refused")
    assert aggregate([(ref("c1"), Health(Phase.MISSING))]) == Health(
        Phase.MISSING, "Deployment/search/search-api in c1")
    assert summary(Health(Phase.HEALTHY)) == "Healthy"
