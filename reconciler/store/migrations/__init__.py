"""Alembic migrations of the insight store (applied by ``Store.open``)."""
