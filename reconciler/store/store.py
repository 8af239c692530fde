"""Open the store (migrating it to the newest schema), write events and revisions, read
an app's timeline and history, and drop what is older than the retention."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, delete, event, inspect, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.orm import Session

from reconciler.store.records import (
    MESSAGE_LIMIT,
    AppKey,
    EventRecord,
    NoSuchStore,
    RevisionRecord,
    ScaleSample,
    StoreError,
)
from reconciler.store.tables import (
    AppEvent,
    AppRevision,
    CanaryProbeRow,
    ClusterSampleRow,
    ScaleSampleRow,
    SLISampleRow,
    UsageSampleRow,
)

READ_LIMIT = 1000
"""The most rows one read returns (a timeline is paged by ``since``)."""
DEFAULT_RETENTION = timedelta(days=30)
_MIGRATIONS = Path(__file__).parent / "migrations"


def _engine(url: str) -> Engine:
    """An engine for ``url``: a SQLite file (WAL, waits for a writer) or PostgreSQL."""
    try:
        parsed = make_url(url)
    except ArgumentError as err:
        raise StoreError(f"store URL is not a database URL: {err}") from None
    if parsed.get_backend_name() not in {"sqlite", "postgresql"}:
        raise StoreError(f"store {parsed.render_as_string(hide_password=True)}: "
                         "only sqlite:/// and postgresql:// are supported")
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        try:
            Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True,
                                                            mode=0o700)
        except OSError as err:
            raise StoreError(f"store {parsed.database}: {err.strerror}") from None
    if parsed.get_backend_name() == "postgresql" and parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    engine = create_engine(parsed, pool_pre_ping=True,
                           connect_args={"timeout": 30} if parsed.get_backend_name() == "sqlite"
                           else {"connect_timeout": 10})
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _check_exists(url: str) -> None:
    """:class:`NoSuchStore` for a SQLite URL whose file is not there."""
    try:
        parsed = make_url(url)
    except ArgumentError as err:
        raise StoreError(f"store URL is not a database URL: {err}") from None
    if parsed.get_backend_name() == "sqlite" and (
            parsed.database in (None, "", ":memory:")
            or not Path(parsed.database).expanduser().is_file()):
        raise NoSuchStore(f"no insight store at {parsed.database or url!r}: give the URL "
                          "`pincompile serve --store` writes (serve creates it)")


def _where(url: str) -> str:
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "store"


class Store:
    """Events and revisions of apps in one database. Thread-safe (a session per call)."""

    def __init__(self, engine: Engine, retention: timedelta) -> None:
        self.engine = engine
        self.retention = retention

    @classmethod
    def open(cls, url: str, *, retention: timedelta = DEFAULT_RETENTION,
             create: bool = True) -> Store:
        """Connect and migrate to the newest schema (Alembic ``upgrade head``). Without
        ``create`` (a reader of what ``serve`` keeps), a URL that names no store yet is
        :class:`NoSuchStore`, and nothing is created."""
        if not create:
            _check_exists(url)
        engine = _engine(url)
        config = Config()
        config.set_main_option("script_location", str(_MIGRATIONS))
        try:
            with engine.begin() as connection:
                if not create and not inspect(connection).has_table("alembic_version"):
                    raise NoSuchStore(f"{_where(url)} is not an insight store (`pincompile "
                                      "serve --store URL` creates one)")
                config.attributes["connection"] = connection
                command.upgrade(config, "head")
        except NoSuchStore:
            engine.dispose()
            raise
        except SQLAlchemyError as err:
            engine.dispose()
            orig = getattr(err, "orig", None)
            reason = str(orig) if orig else type(err).__name__
            raise StoreError(f"{_where(url)}: {reason.strip().splitlines()[0]}") from None
        return cls(engine, retention)

    def close(self) -> None:
        self.engine.dispose()

    def add_events(self, records: Iterable[EventRecord]) -> int:
        """Insert events; a (cluster, uid) seen before is updated in place. Returns rows."""
        rows = [_event_row(record) for record in records]
        if not rows:
            return 0
        insert = self.insert(AppEvent)
        statement = insert.on_conflict_do_update(
            index_elements=["cluster", "uid"],
            set_={"count": insert.excluded.count, "message": insert.excluded.message,
                  "last_seen": insert.excluded.last_seen, "type": insert.excluded.type})
        with Session(self.engine) as session, session.begin():
            session.execute(statement, rows)
        return len(rows)

    def events(self, app: AppKey, *, since: datetime | None = None,
               limit: int = READ_LIMIT) -> list[EventRecord]:
        """The app's events, oldest first: the newest ``limit`` of them, or with ``since``
        the first ``limit`` last seen at or after it (to page forward from there)."""
        kind, project, name = app
        query = select(AppEvent).where(AppEvent.kind == kind, AppEvent.project == project,
                                       AppEvent.name == name)
        if since is not None:
            query = query.where(AppEvent.last_seen >= since) \
                .order_by(AppEvent.last_seen, AppEvent.id)
        else:
            query = query.order_by(AppEvent.last_seen.desc(), AppEvent.id.desc())
        with Session(self.engine) as session:
            rows = [_event_record(row) for row in
                    session.scalars(query.limit(max(1, min(limit, READ_LIMIT))))]
        return rows if since is not None else rows[::-1]

    def add_revision(self, record: RevisionRecord) -> bool:
        """Record a revision applied to an app; ``False`` when that very record (app,
        revision, time) is there already (another replica wrote it)."""
        insert = self.insert(AppRevision).values(**_revision_row(record)) \
            .on_conflict_do_nothing().returning(AppRevision.id)
        with Session(self.engine) as session, session.begin():
            return session.execute(insert).first() is not None

    def add_revisions(self, records: Iterable[RevisionRecord]) -> int:
        """Record revisions in one transaction (each as :meth:`add_revision`, but a
        record there already gains the push that triggered it if it had none); returns
        how many were offered."""
        rows = [_revision_row(record) for record in records]
        if rows:
            insert = self.insert(AppRevision)
            statement = insert.on_conflict_do_update(
                index_elements=["kind", "project", "name", "revision", "applied_at"],
                set_={"push": insert.excluded.push}, where=insert.excluded.push != "")
            with Session(self.engine) as session, session.begin():
                session.execute(statement, rows)
        return len(rows)

    def insert(self, table: Any) -> Any:
        """INSERT that can say ON CONFLICT, in this store's dialect."""
        return (postgresql.insert if self.engine.dialect.name == "postgresql"
                else sqlite.insert)(table)

    def history(self, app: AppKey, *, limit: int = READ_LIMIT) -> list[RevisionRecord]:
        """Revisions applied to the app, newest first."""
        kind, project, name = app
        query = (select(AppRevision)
                 .where(AppRevision.kind == kind, AppRevision.project == project,
                        AppRevision.name == name)
                 .order_by(AppRevision.applied_at.desc(), AppRevision.id.desc())
                 .limit(max(1, min(limit, READ_LIMIT))))
        with Session(self.engine) as session:
            return [_revision_record(row) for row in session.scalars(query)]

    def add_samples(self, samples: Iterable[ScaleSample]) -> int:
        """Record PinScalers' replicas; a (app, minute) recorded already is kept as it was
        (another replica wrote it). Returns the samples offered."""
        rows = [{"kind": s.app[0], "project": s.app[1], "name": s.app[2], "at": s.at,
                 "desired": s.desired, "ready": s.ready, "floor": s.floor} for s in samples]
        if not rows:
            return 0
        with Session(self.engine) as session, session.begin():
            session.execute(self.insert(ScaleSampleRow).on_conflict_do_nothing(), rows)
        return len(rows)

    def samples(self, app: AppKey, *, since: datetime,
                limit: int = READ_LIMIT) -> list[ScaleSample]:
        """The app's samples at or after ``since``, oldest first."""
        kind, project, name = app
        query = (select(ScaleSampleRow)
                 .where(ScaleSampleRow.kind == kind, ScaleSampleRow.project == project,
                        ScaleSampleRow.name == name, ScaleSampleRow.at >= since)
                 .order_by(ScaleSampleRow.at).limit(max(1, min(limit, READ_LIMIT))))
        with Session(self.engine) as session:
            return [ScaleSample(app=(r.kind, r.project, r.name), at=aware(r.at),
                                desired=r.desired, ready=r.ready, floor=r.floor)
                    for r in session.scalars(query)]

    def prune(self, now: datetime | None = None) -> int:
        """Drop events last seen, revisions applied, samples (replicas, usage, SLIs) taken
        and probes started before the retention. Returns rows."""
        cutoff = (now or datetime.now(UTC)) - self.retention
        with Session(self.engine) as session, session.begin():
            dropped = [session.execute(delete(AppEvent).where(AppEvent.last_seen < cutoff)),
                       session.execute(delete(AppRevision).where(AppRevision.applied_at
                                                                 < cutoff)),
                       session.execute(delete(ScaleSampleRow).where(ScaleSampleRow.at
                                                                    < cutoff)),
                       session.execute(delete(CanaryProbeRow).where(CanaryProbeRow.started
                                                                    < cutoff)),
                       session.execute(delete(SLISampleRow).where(SLISampleRow.at < cutoff)),
                       *(session.execute(delete(table).where(table.t < cutoff.timestamp()))
                         for table in (UsageSampleRow, ClusterSampleRow))]
        return sum(int(getattr(r, "rowcount", 0) or 0) for r in dropped)


def _event_row(record: EventRecord) -> dict[str, Any]:
    kind, project, name = record.app
    return {"kind": kind, "project": project, "name": name, "cluster": record.cluster,
            "uid": record.uid, "source": record.source,
            "type": "Warning" if record.warning else "Normal", "reason": record.reason[:128],
            "message": record.message[:MESSAGE_LIMIT], "object": record.object[:512],
            "count": record.count, "first_seen": record.first_seen or record.last_seen,
            "last_seen": record.last_seen}


def _revision_row(record: RevisionRecord) -> dict[str, Any]:
    kind, project, name = record.app
    return {"kind": kind, "project": project, "name": name, "revision": record.revision,
            "commit": record.commit, "author": record.author, "push": record.push,
            "result": record.result, "detail": record.detail[:MESSAGE_LIMIT],
            "applied_at": record.applied_at}


def aware(stamp: datetime) -> datetime:
    """SQLite hands back naive datetimes; every stamp the store writes is UTC."""
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


def _event_record(row: AppEvent) -> EventRecord:
    return EventRecord(app=(row.kind, row.project, row.name), reason=row.reason,
                       message=row.message, uid=row.uid, cluster=row.cluster,
                       source=row.source, warning=row.type == "Warning", object=row.object,
                       count=row.count, first_seen=aware(row.first_seen),
                       last_seen=aware(row.last_seen))


def _revision_record(row: AppRevision) -> RevisionRecord:
    return RevisionRecord(app=(row.kind, row.project, row.name), revision=row.revision,
                          applied_at=aware(row.applied_at), result=row.result,
                          commit=row.commit, author=row.author, push=row.push,
                          detail=row.detail)
