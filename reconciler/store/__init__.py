"""The insight store: every app's events and applied revisions, kept beyond the API
servers' event TTL.

SQLite (embedded, a file) by default; PostgreSQL when several ``serve`` replicas share
one store. SQLAlchemy 2 with Alembic migrations, applied when the store is opened.
"""

from reconciler.store.records import EventRecord, RevisionRecord
from reconciler.store.store import Store, StoreError

__all__ = ["EventRecord", "RevisionRecord", "Store", "StoreError"]
