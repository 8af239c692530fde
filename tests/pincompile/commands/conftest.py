"""Fixtures of the command tests: ``pincompile diff`` with a stand-in expansion."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.tiny_repo import toy_expand


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
