"""Fixtures of the expansion tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.expand import GOLDEN, PLATFORM


@pytest.fixture
def fleet_repo(tmp_path: Path) -> Path:
    """A valid spec repo: the golden fleet plus the apps of several golden cases."""
    root = tmp_path / "repo"
    shutil.copytree(PLATFORM, root)
    for case in ("pinapp", "pinscaler", "cronjob", "jobset"):
        shutil.copytree(GOLDEN / case / "input", root, dirs_exist_ok=True)
    return root
