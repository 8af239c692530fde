"""Fixtures for serve's tests: a real bare repository of the example specs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.serve import SpecRepo


@pytest.fixture
def spec_repo(tmp_path: Path) -> SpecRepo:
    return SpecRepo(tmp_path)
