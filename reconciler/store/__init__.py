"""The insight store: every app's events and applied revisions, kept beyond the API
servers' event TTL, and PinScalers' replicas over time.

SQLite (embedded, a file) by default; PostgreSQL when several ``serve`` replicas share
one store. SQLAlchemy 2 with Alembic migrations, applied when the store is opened.
"""

from reconciler.store.records import EventRecord, RevisionRecord, ScaleSample
from reconciler.store.store import NoSuchStore, Store, StoreError

__all__ = ["EventRecord", "NoSuchStore", "RevisionRecord", "ScaleSample", "Store",
           "StoreError"]
