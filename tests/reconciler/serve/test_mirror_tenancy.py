"""serve's compile of a push holds the tenant boundary: after a clean compile, a push that
edits an app into another project is refused with the located ``wrong-folder`` error, by
the same incremental check a push of one app gets (docs/spec.md § Folders bind owners)."""

from __future__ import annotations

from pathlib import Path

from reconciler.serve.mirror import Mirror
from tests.support.serve import SpecRepo


def test_a_push_moving_an_app_into_another_project_is_refused(spec_repo: SpecRepo,
                                                             tmp_path: Path) -> None:
    mirror = Mirror(str(spec_repo.bare), "main", tmp_path / "mirror")
    assert mirror.compile(mirror.fetch()).ok
    name = "apps/search/relevance-notebook.yaml"
    text = (spec_repo.work / name).read_text()
    spec_repo.commit("notebook into ads", {name: text.replace("project: search", "project: ads")})
    result = mirror.compile(mirror.fetch())
    assert mirror.incremental
    assert [(d.file, d.code) for d in result.diagnostics] == [(name, "wrong-folder")]
    assert not result.manifests
