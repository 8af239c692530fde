"""Fixtures more than one folder of the compiler's tests uses."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.expand import GOLDEN, PLATFORM
from tests.support.tiny_repo import FILES, Repo


@pytest.fixture
def fleet_repo(tmp_path: Path) -> Path:
    """A valid spec repo: the golden fleet plus the apps of several golden cases."""
    root = tmp_path / "repo"
    shutil.copytree(PLATFORM, root)
    for case in ("pinapp", "pinscaler", "cronjob", "jobset"):
        shutil.copytree(GOLDEN / case / "input", root, dirs_exist_ok=True)
    return root


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    """A git repository whose first commit holds the tiny spec tree under ``specs/``."""
    r = Repo(tmp_path / "repo")
    r.root.mkdir()
    r.git("init", "-q", "-b", "main")
    r.commit({f"specs/{k}": v for k, v in FILES.items()}, "specs")
    return r
