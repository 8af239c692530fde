"""The branch mirror: fetch, resolve the head, compile a revision from git objects."""

from __future__ import annotations

from pathlib import Path

import pytest

from pincompile.compiler import compile_path
from pincompile.source.gitsource import GitError
from reconciler.serve.mirror import Mirror
from reconciler.serve.redact import redact
from tests.support.serve import BAD_SPEC, EXAMPLES, SpecRepo, git


def test_fetch_follows_the_branch_head(spec_repo: SpecRepo, tmp_path: Path) -> None:
    mirror = Mirror(str(spec_repo.bare), "main", tmp_path / "mirror")
    assert mirror.fetch() == spec_repo.first
    second = spec_repo.commit("bump search")
    spec_repo.commit("elsewhere", branch="feature")
    assert mirror.fetch() == second
    commit = mirror.commit(second)
    assert (commit.author, commit.subject) == ("Ada Lovelace", "bump search")


def test_a_revision_compiles_like_the_same_tree_on_disk(spec_repo: SpecRepo,
                                                        tmp_path: Path) -> None:
    mirror = Mirror(str(spec_repo.bare), "main", tmp_path / "mirror")
    sha = mirror.fetch()
    result = mirror.compile(sha)
    on_disk = compile_path(spec_repo.work, revision=sha)
    assert result.ok and result.manifests
    assert [m.obj for m in result.manifests] == [m.obj for m in on_disk.manifests]
    assert all(m.obj["metadata"]["annotations"]["pincompute.io/revision"] == sha
               for m in result.manifests)
    assert mirror.compile(sha) is result, "a resync of the same head recompiles"


def test_a_push_parses_only_the_files_it_changed(spec_repo: SpecRepo, tmp_path: Path) -> None:
    mirror = Mirror(str(spec_repo.bare), "main", tmp_path / "mirror")
    mirror.compile(mirror.fetch())
    parsed = mirror.parsed_files
    name = "apps/ads/ads-serving.yaml"
    text = (spec_repo.work / name).read_text()
    sha = spec_repo.commit("touch ads-serving", {name: "# reviewed\n" + text})
    result = mirror.compile(mirror.fetch())
    assert mirror.parsed_files - parsed == 1, "only the changed file is parsed again"
    assert mirror.incremental, "only the changed app is checked, placed and expanded again"
    on_disk = compile_path(spec_repo.work, revision=sha)
    assert [m.obj for m in result.manifests] == [m.obj for m in on_disk.manifests]


def test_spec_folder_inside_the_repository(tmp_path: Path) -> None:
    repo = SpecRepo(tmp_path / "r", specs=EXAMPLES)
    git(repo.work, "mv", "apps", "deploy-apps")
    nested = repo.commit("move", files={})
    mirror = Mirror(str(repo.bare), "main", tmp_path / "mirror", spec_path="platform/")
    assert mirror.fetch() == nested
    result = mirror.compile(nested)
    assert result.ok and len(result.catalog.clusters) == 6
    assert not list(result.catalog.of_kind("PinApp")), "read specs outside --path"


def test_a_broken_commit_compiles_to_diagnostics(spec_repo: SpecRepo, tmp_path: Path) -> None:
    bad = spec_repo.commit("broken", files={"apps/search/broken.yaml": BAD_SPEC})
    mirror = Mirror(str(spec_repo.bare), "main", tmp_path / "mirror")
    assert mirror.fetch() == bad
    result = mirror.compile(bad)
    assert not result.ok
    assert {(d.file, d.line) for d in result.diagnostics} >= {("apps/search/broken.yaml", 5)}


def test_unreachable_repository_and_missing_branch_are_git_errors(spec_repo: SpecRepo,
                                                                   tmp_path: Path) -> None:
    with pytest.raises(GitError, match="git fetch"):
        Mirror(str(tmp_path / "nowhere.git"), "main", tmp_path / "m1").fetch()
    with pytest.raises(GitError, match="git fetch"):
        Mirror(str(spec_repo.bare), "no-such-branch", tmp_path / "m2").fetch()
    with pytest.raises(GitError, match="not a valid branch"):
        Mirror(str(spec_repo.bare), "--upload-pack=evil", tmp_path / "m3")


def test_a_token_in_the_query_is_refused_and_not_shown(tmp_path: Path) -> None:
    with pytest.raises(GitError, match="cannot fetch a URL with a query") as refused:
        Mirror("https://git.example/r.git?access_token=QSECRET", "main", tmp_path / "m")
    assert "QSECRET" not in str(refused.value)
    assert redact(str(refused.value)) == str(refused.value)  # shown once more: unchanged
