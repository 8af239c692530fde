"""The store's tables (SQLAlchemy 2 declarative). A change here needs a migration in
``migrations/versions``; ``tests/reconciler/store`` checks that the two agree."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    Boolean,
    DateTime,
    Float,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    """Metadata of every table of the store."""


class AppEvent(Base):
    """An event of an app, folded by (cluster, uid)."""

    __tablename__ = "app_events"
    __table_args__ = (
        UniqueConstraint("cluster", "uid", name="uq_app_events_cluster_uid"),
        Index("ix_app_events_app_last_seen", "project", "kind", "name", "last_seen"),
        Index("ix_app_events_last_seen", "last_seen"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(63))
    project: Mapped[str] = mapped_column(String(63))
    name: Mapped[str] = mapped_column(String(253))
    cluster: Mapped[str] = mapped_column(String(253), default="")
    uid: Mapped[str] = mapped_column(String(253))
    source: Mapped[str] = mapped_column(String(32))
    type: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(String(128))
    message: Mapped[str] = mapped_column(Text)
    object: Mapped[str] = mapped_column(String(512), default="")
    count: Mapped[int] = mapped_column(Integer, default=1)
    first_seen: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    last_seen: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class AppRevision(Base):
    """A revision applied to an app."""

    __tablename__ = "app_revisions"
    __table_args__ = (
        UniqueConstraint("kind", "project", "name", "revision", "applied_at",
                         name="uq_app_revisions_app_revision_time"),
        Index("ix_app_revisions_app_applied_at", "project", "kind", "name", "applied_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(63))
    project: Mapped[str] = mapped_column(String(63))
    name: Mapped[str] = mapped_column(String(253))
    revision: Mapped[str] = mapped_column(String(128))
    commit: Mapped[str] = mapped_column(String(64), default="")
    author: Mapped[str] = mapped_column(String(253), default="")
    push: Mapped[str] = mapped_column(String(128), default="")
    result: Mapped[str] = mapped_column(String(16))
    detail: Mapped[str] = mapped_column(Text, default="")
    applied_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class ScaleSampleRow(Base):
    """A PinScaler's replicas at one minute (one row per app and minute)."""

    __tablename__ = "scale_samples"
    __table_args__ = (
        UniqueConstraint("kind", "project", "name", "at", name="uq_scale_samples_app_at"),
        Index("ix_scale_samples_at", "at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(63))
    project: Mapped[str] = mapped_column(String(63))
    name: Mapped[str] = mapped_column(String(253))
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    desired: Mapped[int] = mapped_column(Integer)
    ready: Mapped[int] = mapped_column(Integer)
    floor: Mapped[int] = mapped_column(Integer)


class CanaryProbeRow(Base):
    """One canary probe in one member cluster and tier (``serve --canary``)."""

    __tablename__ = "canary_probes"
    __table_args__ = (
        Index("ix_canary_probes_cluster_started", "cluster", "started"),
        Index("ix_canary_probes_started", "started"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    cluster: Mapped[str] = mapped_column(String(253))
    tier: Mapped[str] = mapped_column(String(16))
    started: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    ok: Mapped[bool] = mapped_column(Boolean)
    stage: Mapped[str] = mapped_column(String(16))
    message: Mapped[str] = mapped_column(Text, default="")
    launch_seconds: Mapped[float | None] = mapped_column(Float, nullable=True)
    seconds: Mapped[float] = mapped_column(Float)
    requests: Mapped[int] = mapped_column(Integer, default=0)


class SLISampleRow(Base):
    """One SLI's events of one minute with the same labels, from one ``serve`` replica."""

    __tablename__ = "sli_samples"
    __table_args__ = (
        UniqueConstraint("sli", "labels", "source", "at", name="uq_sli_samples_key"),
        Index("ix_sli_samples_sli_at", "sli", "at"),
        Index("ix_sli_samples_at", "at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    sli: Mapped[str] = mapped_column(String(32))
    labels: Mapped[str] = mapped_column(String(512))
    """``name=value`` pairs, comma-separated, sorted as recorded."""
    source: Mapped[str] = mapped_column(String(253))
    """The replica that counted them (several replicas may share a store)."""
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    total: Mapped[int] = mapped_column(Integer)
    errors: Mapped[int] = mapped_column(Integer)
    buckets: Mapped[str] = mapped_column(Text, default="")
    """Events within each of the SLI's histogram buckets, comma-separated."""
