from __future__ import annotations

import tempfile
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import text

from reconciler.store import Store
from reconciler.store.tables import Base
from tests.reconciler.store.postgres import postgres_server


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    with (tempfile.TemporaryDirectory(prefix="pincompile-pg-") as base,
          postgres_server(Path(base)) as url):
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The store's URL on each backend, its tables empty."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'insight.db'}"
        return
    base = request.getfixturevalue("postgres_url")
    store = Store.open(base)
    with store.engine.begin() as connection:  # every test starts from empty tables
        tables = ", ".join(t.name for t in Base.metadata.sorted_tables)
        connection.execute(text(f"TRUNCATE {tables}"))
    store.close()
    yield base


@pytest.fixture
def store(url: str) -> Iterator[Store]:
    opened = Store.open(url, retention=timedelta(days=7))
    yield opened
    opened.close()
