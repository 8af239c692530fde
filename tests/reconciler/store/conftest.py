from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.reconciler.store.postgres import postgres_server


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    with (tempfile.TemporaryDirectory(prefix="pincompile-pg-") as base,
          postgres_server(Path(base)) as url):
        yield url
