"""Canary probes and SLI samples in the insight store, on SQLite and PostgreSQL: each
replica's samples kept apart and a minute written again replaced, probes read per cluster,
both dropped after the retention."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text

from reconciler.store import Store
from reconciler.store import verification as kept

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
LABELS = (("cluster", "use1a"), ("tier", "reserved"), ("source", "canary"))


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'insight.db'}"
    else:
        url = request.getfixturevalue("postgres_url")
    opened = Store.open(url, retention=timedelta(days=7))
    with opened.engine.begin() as connection:
        connection.execute(text("DELETE FROM canary_probes"))
        connection.execute(text("DELETE FROM sli_samples"))
    yield opened
    opened.close()


def probe(cluster: str, minute: int, ok: bool = True) -> kept.ProbeRecord:
    return kept.ProbeRecord(cluster, "reserved", T0 + timedelta(minutes=minute), ok,
                            "passed" if ok else "launch", "" if ok else "0 of 1 pods Ready",
                            4.2 if ok else None, 6.0, 14)


def test_probes_are_read_per_cluster_oldest_first(store: Store) -> None:
    for minute, cluster in enumerate(["a", "b", "a"]):
        kept.add_probe(store, probe(cluster, minute, ok=minute != 2))
    found = kept.probes(store, since=T0, cluster="a")
    assert [(p.cluster, p.ok, p.launch_seconds, p.message) for p in found] == [
        ("a", True, 4.2, ""), ("a", False, None, "0 of 1 pods Ready")]
    assert len(kept.probes(store, since=T0)) == 3
    assert kept.probes(store, since=T0, limit=1)[0].started == T0 + timedelta(minutes=2)


def test_each_replica_keeps_its_own_samples_and_a_minute_written_again_is_replaced(
        store: Store) -> None:
    first = kept.SLISample("launch-latency", LABELS, T0, 3, 1, (0, 1, 2))
    kept.add_samples(store, [first], "serve-a")
    kept.add_samples(store, [kept.SLISample("launch-latency", LABELS, T0, 4, 1, (1, 2, 3))],
                     "serve-a")
    kept.add_samples(store, [first], "serve-b")
    found = kept.samples(store, "launch-latency", since=T0)
    assert sorted((s.total, s.buckets) for s in found) == [(3, (0, 1, 2)), (4, (1, 2, 3))]
    assert all(s.labels == LABELS and s.at == T0 for s in found)
    assert kept.samples(store, "api-availability", since=T0) == []


def test_probes_and_samples_older_than_the_retention_are_dropped(store: Store) -> None:
    kept.add_probe(store, probe("a", 0))
    kept.add_samples(store, [kept.SLISample("reconcile-latency", (("cluster", "a"),), T0, 1,
                                            0, (1,) * 15)], "serve-a")
    store.prune(now=T0 + timedelta(days=6))
    assert kept.probes(store, since=T0) and kept.samples(store, "reconcile-latency", since=T0)
    assert store.prune(now=T0 + timedelta(days=8)) >= 2
    assert kept.probes(store, since=T0) == [] and kept.samples(
        store, "reconcile-latency", since=T0) == []
