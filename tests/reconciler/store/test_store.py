"""The insight store on both its backends: SQLite (a file) and a real PostgreSQL server."""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from reconciler.store import (
    EventRecord,
    NoSuchStore,
    RevisionRecord,
    ScaleSample,
    Store,
    StoreError,
)
from reconciler.store.tables import Base

APP = ("PinApp", "shop", "web")
OTHER = ("PinApp", "ads", "web")
T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def event(uid: str, minute: int, app: tuple[str, str, str] = APP, **extra: object) -> EventRecord:
    return EventRecord(app=app, reason="Applied", message=f"event {uid}", uid=uid,
                       last_seen=T0 + timedelta(minutes=minute), **extra)  # type: ignore[arg-type]


def test_a_repeated_event_is_folded_into_one_row_like_kubernetes_does(store: Store) -> None:
    store.add_events([event("e1", 0, cluster="us-east-1a")])
    store.add_events([EventRecord(app=APP, reason="Applied", message="again", uid="e1",
                                  cluster="us-east-1a", count=4, warning=True,
                                  first_seen=T0, last_seen=T0 + timedelta(minutes=9))])
    store.add_events([event("e1", 1, cluster="us-west-2a")])  # same uid, other cluster
    rows = store.events(APP)
    assert [(r.cluster, r.count, r.message, r.warning) for r in rows] == [
        ("us-west-2a", 1, "event e1", False), ("us-east-1a", 4, "again", True)]
    assert rows[1].first_seen == T0 and rows[1].last_seen == T0 + timedelta(minutes=9)


def test_a_timeline_is_one_apps_oldest_first_paged_by_since(store: Store) -> None:
    store.add_events([event("b", 2), event("a", 1), event("c", 3), event("x", 2, app=OTHER)])
    assert [r.uid for r in store.events(APP)] == ["a", "b", "c"]
    assert [r.uid for r in store.events(APP, since=T0 + timedelta(minutes=2))] == ["b", "c"]
    # a timeline shows the newest events (oldest first); a reader paging forward from a
    # time gets the first ones after it
    assert [r.uid for r in store.events(APP, limit=2)] == ["b", "c"]
    assert [r.uid for r in store.events(APP, since=T0, limit=2)] == ["a", "b"]
    assert [r.uid for r in store.events(OTHER)] == ["x"]


def test_history_is_newest_first_with_commit_push_and_result(store: Store) -> None:
    for minute, result in [(0, "converged"), (5, "unconverged")]:
        store.add_revision(RevisionRecord(app=APP, revision=f"r{minute}", result=result,
                                          applied_at=T0 + timedelta(minutes=minute),
                                          commit="a" * 40, author="dev@example.com",
                                          push="delivery-1"))
    history = store.history(APP)
    assert [(h.revision, h.result) for h in history] == [("r5", "unconverged"),
                                                          ("r0", "converged")]
    assert history[0].commit == "a" * 40 and history[0].push == "delivery-1"
    assert store.history(OTHER) == []


def test_a_revision_two_replicas_record_is_kept_once(store: Store) -> None:
    record = RevisionRecord(app=APP, revision="r1", result="Healthy", applied_at=T0)
    assert store.add_revision(record) is True
    assert store.add_revision(record) is False
    later = RevisionRecord(app=APP, revision="r2", result="Healthy",
                           applied_at=T0 + timedelta(minutes=1))
    assert store.add_revisions([record, later]) == 2  # a pass's batch: r1 is kept once
    assert [h.revision for h in store.history(APP)] == ["r2", "r1"]
    # the replica whose pass a push triggered names it, though another wrote the row first
    store.add_revisions([replace(later, push="delivery-9")])
    store.add_revisions([later])  # and a record without one does not take it away
    assert [h.push for h in store.history(APP)] == ["delivery-9", ""]


def test_prune_drops_only_what_is_older_than_the_retention(store: Store) -> None:
    now = T0 + timedelta(days=10)
    store.add_events([event("old", 0), event("new", 60 * 24 * 5)])
    store.add_revision(RevisionRecord(app=APP, revision="old", result="converged",
                                      applied_at=T0))
    assert store.prune(now) == 2
    assert [r.uid for r in store.events(APP)] == ["new"] and store.history(APP) == []


def test_a_hostile_message_is_kept_bounded(store: Store) -> None:
    store.add_events([EventRecord(app=APP, reason="R" * 1000, message="m" * 1_000_000,
                                  uid="big", last_seen=T0)])
    (row,) = store.events(APP)
    assert len(row.message) == 4096 and len(row.reason) == 128


def test_a_scalers_samples_are_one_per_minute_read_since_and_pruned(store: Store) -> None:
    scaler = ("PinScaler", "shop", "web")
    assert store.add_samples([ScaleSample(scaler, T0 + timedelta(minutes=m), 3 + m, 2 + m, 2)
                              for m in range(3)]) == 3
    store.add_samples([ScaleSample(scaler, T0, 99, 99, 99)])  # another replica, same minute
    rows = store.samples(scaler, since=T0 + timedelta(minutes=1))
    assert [(s.at, s.desired, s.ready, s.floor) for s in rows] == [
        (T0 + timedelta(minutes=1), 4, 3, 2), (T0 + timedelta(minutes=2), 5, 4, 2)]
    assert store.samples(scaler, since=T0)[0].desired == 3
    assert store.samples(("PinScaler", "shop", "other"), since=T0) == []
    store.prune(now=T0 + timedelta(days=7, minutes=1, seconds=30))
    assert [s.desired for s in store.samples(scaler, since=T0)] == [5]


def test_the_migrations_build_exactly_the_tables_the_code_uses(store: Store) -> None:
    with store.engine.connect() as connection:
        assert compare_metadata(MigrationContext.configure(connection), Base.metadata) == []


def test_replicas_open_the_same_store_and_write_at_once(url: str) -> None:
    first, second = Store.open(url), Store.open(url)  # the second finds it migrated
    writers = [threading.Thread(target=lambda s=s, i=i: s.add_events(
        [event(f"{i}-{n}", n) for n in range(50)])) for i, s in enumerate([first, second])]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(timeout=60)
    assert len(first.events(APP)) == 100
    first.close()
    second.close()


def test_a_sqlite_store_makes_its_folder(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'new' / 'folder' / 'insight.db'}")
    store.close()
    assert (tmp_path / "new" / "folder" / "insight.db").is_file()


def test_a_bad_store_url_is_a_clear_error_that_hides_the_password(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="only sqlite"):
        Store.open("mysql://u:hunter2@db/x")
    with pytest.raises(StoreError, match="not a database URL"):
        Store.open("not a url")
    with pytest.raises(StoreError) as refused:
        Store.open(f"postgresql://u:hunter2@/x?host={tmp_path}")  # no server there
    assert "hunter2" not in str(refused.value) and "***" in str(refused.value)


def test_a_reader_never_creates_a_store_where_there_is_none(tmp_path: Path) -> None:
    missing = tmp_path / "typo" / "insight.db"
    with pytest.raises(NoSuchStore, match="no insight store at"):
        Store.open(f"sqlite:///{missing}", create=False)
    assert not missing.parent.exists()
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE notes (body TEXT)").connection.commit()
    with pytest.raises(NoSuchStore, match="is not an insight store"):
        Store.open(f"sqlite:///{other}", create=False)
    made = tmp_path / "insight.db"
    Store.open(f"sqlite:///{made}").close()  # as serve opens it
    kept = Store.open(f"sqlite:///{made}", create=False)
    assert kept.events(APP) == []
    kept.close()
