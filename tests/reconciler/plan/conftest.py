"""Fixtures of the plan's tests: the fixture repository applied to in-memory clusters."""

from __future__ import annotations

from pathlib import Path

import pytest

from pincompile.compiler import compile_path
from tests.support.fake_passes import FakePass, fake_fleet, spec_repo
from tests.support.kube_fake import FakeFleet


@pytest.fixture
def converged(tmp_path: Path) -> tuple[FakeFleet, Path]:
    """A fake fleet the fixture repository (a git copy of it) was applied to."""
    repo = spec_repo(tmp_path / "repo")
    fleet = fake_fleet(compile_path(repo))
    assert FakePass(fleet, repo).report.ok
    return fleet, repo
