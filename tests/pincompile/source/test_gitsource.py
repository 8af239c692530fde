"""Reading a revision's specs from git objects gives what the working-tree loader gives."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pincompile.source import loader
from pincompile.source.gitsource import (
    GitError,
    load_revision,
    path_exists,
    read_blobs,
    resolve_ref,
    spec_root,
)
from pincompile.source.loader import load_tree
from tests.support.tiny_repo import CART, CART_V2, FILES, Repo


def comparable(result: loader.LoadResult) -> tuple[object, ...]:
    docs = [(d.file, d.index, d.line, d.column, repr(d.data)) for d in result.documents]
    return docs, dict(result.sources), sorted(result.diagnostics)


def test_revision_loads_like_the_working_tree(repo: Repo) -> None:
    root = spec_root(repo.root / "specs")
    assert root.toplevel == Path(os.path.realpath(repo.root)) and root.prefix == "specs"
    from_git = load_revision(root, resolve_ref(root.toplevel, "HEAD"))
    assert comparable(from_git) == comparable(load_tree(repo.root / "specs"))
    assert sorted(from_git.sources) == sorted(FILES)


def test_revision_ignores_the_dirty_working_tree(repo: Repo) -> None:
    first = resolve_ref(repo.root, "HEAD")
    repo.commit({"specs/apps/shop/cart.yaml": CART_V2}, "v2")
    repo.write({"specs/apps/shop/cart.yaml": "garbage: [", "specs/apps/new.yaml": "a: 1\n"})
    root = spec_root(repo.root / "specs")
    old = load_revision(root, first)
    new = load_revision(root, resolve_ref(repo.root, "HEAD"))
    assert old.sources["apps/shop/cart.yaml"] == CART
    assert new.sources["apps/shop/cart.yaml"] == CART_V2
    assert "apps/new.yaml" not in new.sources and not new.diagnostics


def test_hidden_and_non_yaml_files_are_skipped(repo: Repo) -> None:
    repo.commit({"specs/.github/ci.yaml": "a: 1\n", "specs/apps/.hidden.yaml": "a: 1\n",
                 "specs/README.md": "# hi\n", "specs/apps/x.yml": "a: 1\n"}, "extras")
    root = spec_root(repo.root / "specs")
    got = load_revision(root, resolve_ref(repo.root, "HEAD"))
    assert sorted(got.sources) == sorted([*FILES, "apps/x.yml"])
    assert comparable(got) == comparable(load_tree(repo.root / "specs"))


def test_symlinks_follow_loader_semantics(repo: Repo) -> None:
    (repo.root / "outside.yaml").write_text("a: 1\n")
    (repo.root / "specs" / "apps" / "inside.yaml").symlink_to("shop/cart.yaml")
    (repo.root / "specs" / "apps" / "escape.yaml").symlink_to("../../outside.yaml")
    (repo.root / "specs" / "apps" / "dir.yaml").symlink_to("shop")
    repo.commit({}, "links")
    root = spec_root(repo.root / "specs")
    got = load_revision(root, resolve_ref(repo.root, "HEAD"))
    expected = load_tree(repo.root / "specs")
    assert comparable(got) == comparable(expected)
    assert got.sources["apps/inside.yaml"] == CART
    assert [(d.file, d.code) for d in got.diagnostics] == [
        ("apps/escape.yaml", "symlink-outside-root")]


def test_a_single_file_as_the_spec_root(repo: Repo) -> None:
    root = spec_root(repo.root / "specs" / "apps" / "shop" / "cart.yaml")
    got = load_revision(root, resolve_ref(repo.root, "HEAD"))
    assert list(got.sources) == ["cart.yaml"]
    assert comparable(got) == comparable(load_tree(repo.root / "specs/apps/shop/cart.yaml"))


def test_the_repository_root_as_the_spec_root(repo: Repo) -> None:
    root = spec_root(repo.root)
    assert root.prefix == ""
    got = load_revision(root, resolve_ref(repo.root, "HEAD"))
    assert sorted(got.sources) == sorted(f"specs/{k}" for k in FILES)


def test_errors_are_located_in_the_revision(repo: Repo) -> None:
    repo.commit({"specs/apps/bad.yaml": "apiVersion: pincompute.io/v1\nkind: PinApp\na: [1,\n"},
                "bad")
    got = load_revision(spec_root(repo.root / "specs"), resolve_ref(repo.root, "HEAD"))
    (diag,) = got.diagnostics
    assert diag.file == "apps/bad.yaml" and diag.code == "yaml-syntax"


def test_oversized_files_are_refused_unread(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    from pincompile.source import gitsource

    repo.commit({"specs/apps/big.yaml": "a: " + "x" * 5000 + "\n"}, "big")
    head = resolve_ref(repo.root, "HEAD")
    oid = repo.git("rev-parse", f"{head}:specs/apps/big.yaml")
    assert list(read_blobs(repo.root, [oid], limit=100)) == [(oid, 5004)]
    monkeypatch.setattr(gitsource, "MAX_FILE_BYTES", 1000)
    got = load_revision(spec_root(repo.root / "specs"), head)
    assert [(d.file, d.code) for d in got.diagnostics] == [("apps/big.yaml", "file-too-large")]
    assert "apps/big.yaml" not in got.sources
    assert "platform/runtime.yaml" in got.sources  # the files around it still load


def test_many_blobs_through_one_process(repo: Repo) -> None:
    body = "".join(f"k{j}: {j}\n" for j in range(50))
    files = {f"specs/bulk/f{i:04}.yaml": body for i in range(400)}
    repo.commit(files, "bulk")
    got = load_revision(spec_root(repo.root / "specs" / "bulk"),
                        resolve_ref(repo.root, "HEAD"))
    assert len(got.documents) == 400 and got.sources["f0399.yaml"] == body
    assert not got.diagnostics


def test_resolve_ref(repo: Repo) -> None:
    sha = repo.git("rev-parse", "HEAD")
    repo.git("tag", "v1")
    assert resolve_ref(repo.root, "main") == sha
    assert resolve_ref(repo.root, "v1") == sha
    assert resolve_ref(repo.root, sha[:8]) == sha
    for bad in ("nope", "origin/main", "--all", "", "HEAD~5"):
        with pytest.raises(GitError, match=r"unknown revision|not a valid revision"):
            resolve_ref(repo.root, bad)
    with pytest.raises(GitError, match=r"git fetch origin main"):
        resolve_ref(repo.root, "origin/main")


def test_spec_root_outside_git(tmp_path: Path) -> None:
    with pytest.raises(GitError, match="not inside a git work tree"):
        spec_root(tmp_path)


def test_spec_root_of_a_path_missing_from_the_work_tree(repo: Repo) -> None:
    root = spec_root(repo.root / "specs" / "gone")
    assert root.prefix == "specs/gone"
    head = resolve_ref(repo.root, "HEAD")
    assert not path_exists(root, head)
    assert path_exists(spec_root(repo.root / "specs"), head)
    assert load_revision(root, head).documents == []


def test_a_revision_is_bounded_like_the_working_tree(repo: Repo) -> None:
    long = "x" * 100_000
    bomb = CART.replace("kind: PinApp", f"kind: PinApp\nx-long: &s {long}\nx-many: [" +
                        ", ".join(["*s"] * 60) + "]")
    huge = CART.replace("kind: PinApp", "kind: PinApp\nx-huge: " + "9" * 5000)
    repo.commit({"specs/apps/bomb.yaml": bomb, "specs/apps/huge.yaml": huge}, "hostile")
    root = spec_root(repo.root / "specs")
    got = load_revision(root, resolve_ref(repo.root, "HEAD"))
    assert comparable(got) == comparable(load_tree(repo.root / "specs"))
    assert [(d.file, d.code) for d in got.diagnostics] == [("apps/bomb.yaml", "alias-bomb")]
    assert [(p.location(), p.code) for d in got.documents if d.file == "apps/huge.yaml"
            for p in d.problems] == [("apps/huge.yaml:3:9", "yaml-number")]


def test_symlinked_folders_follow_the_working_tree_rules(repo: Repo) -> None:
    specs = repo.root / "specs"
    repo.write({"specs/.shared/extra.yaml": CART.replace("name: cart", "name: extra"),
                "outside/x.yaml": "a: 1\n"})
    (specs / "apps" / "linked").symlink_to("../.shared")
    (specs / "apps" / "again").symlink_to("../.shared")
    (specs / "apps" / "loop").symlink_to("..")
    repo.commit({}, "folder links")
    got = load_revision(spec_root(specs), resolve_ref(repo.root, "HEAD"))
    expected = load_tree(specs)
    assert comparable(got) == comparable(expected)
    assert not {"apps/again/extra.yaml", "apps/linked/extra.yaml"} & set(got.sources)
    assert sorted((w.file, w.code) for w in got.warnings) == sorted(
        (w.file, w.code) for w in expected.warnings) == [
        ("apps/again", "folder-symlink-hidden"), ("apps/linked", "folder-symlink-hidden"),
        ("apps/loop", "folder-symlink-loop")]
