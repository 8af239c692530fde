"""Fixtures of the diff tests: a temporary git repository holding the tiny spec tree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from diff_helpers import FILES, Repo, toy_expand


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    """A repository whose first commit holds the tiny spec tree under ``specs/``."""
    r = Repo(tmp_path / "repo")
    r.root.mkdir()
    r.git("init", "-q", "-b", "main")
    r.commit({f"specs/{k}": v for k, v in FILES.items()}, "specs")
    return r


@pytest.fixture
def toy_pipeline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``pincompile diff`` compile with :func:`toy_expand` instead of the real
    expansion; everything else (git, loading, parsing, checks) is real."""
    from pincompile import pipeline
    from pincompile.commands import diff as diff_command

    def run(loaded: Any, *, revision: str = "unknown", expand: bool = True) -> Any:
        result = pipeline.run(loaded, revision=revision, expand=False)
        if expand and not result.diagnostics:
            result.manifests = toy_expand(result.catalog, revision)
        return result

    monkeypatch.setattr(diff_command, "run", run)
