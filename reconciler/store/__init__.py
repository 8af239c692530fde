"""The insight store: every app's events and applied revisions, kept beyond the API
servers' event TTL, and PinScalers' replicas over time.

SQLite (embedded, a file) by default; PostgreSQL when several ``serve`` replicas share
one store. SQLAlchemy 2 with Alembic migrations, applied when the store is opened.

The records are plain values; :class:`Store` (and SQLAlchemy, Alembic) is imported on
first use, so a command that keeps no store (``get`` without ``--store``) never loads
them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reconciler.store.records import (
    Discarded,
    EventRecord,
    NoSuchStore,
    RevisionRecord,
    ScaleSample,
    StoreError,
)

if TYPE_CHECKING:
    from reconciler.store.store import Store

__all__ = ["Discarded", "EventRecord", "NoSuchStore", "RevisionRecord", "ScaleSample",
           "Store", "StoreError"]

_LAZY = frozenset({"Store"})


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from reconciler.store import store

        return getattr(store, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
