"""``pincompile codeowners``: CODEOWNERS from the Projects' owners and pincompile.yaml, one
file for GitHub, GitLab and Gitea; ``--check`` tells when it is stale."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from ruamel.yaml import YAML

from pincompile.cli import cli
from tests.support.git import git
from tests.support.specs import REPO_ROOT, files, write_tree

CONFIG = ("platformOwners: ['@acme/platform']\nownerHandle: '@acme/{owner}'\n"
          "ownerHandles: {team-oncall: oncall@acme.example}\n")


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout, result.stderr


def rules(text: str) -> list[str]:
    return [line for line in text.splitlines() if line and not line.startswith("#")]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    shop = files()["platform/projects/shop.yaml"]
    assert isinstance(shop, str)
    return write_tree(tmp_path / "specs", files({
        "pincompile.yaml": CONFIG,
        "platform/projects/shop.yaml": shop.replace(
            "owners: [team-shop]", "owners: [team-shop, team-oncall, '@alice', bob@acme.example]"),
    }))


def test_each_project_folder_gets_its_owners_as_handles(tree: Path) -> None:
    code, out, err = invoke("codeowners", str(tree), "--out-file", "-")
    assert (code, err) == (0, "")
    assert rules(out) == [
        "/platform/ @acme/platform", "platform/.* @acme/platform",
        "/pincompile.yaml @acme/platform", "pincompile.yaml @acme/platform",
        "/CODEOWNERS @acme/platform", "CODEOWNERS @acme/platform",
        # infra has no owners in the fixture: the platform reviews it
        "/apps/infra/ @acme/platform", "apps/infra/.* @acme/platform",
        "/apps/shop/ @acme/team-shop oncall@acme.example @alice bob@acme.example",
        "apps/shop/.* @acme/team-shop oncall@acme.example @alice bob@acme.example",
    ]


def test_gitea_reads_the_regular_expressions_as_the_others_read_the_paths(tree: Path) -> None:
    """Gitea anchors each rule (``^rule$``); GitHub and GitLab match a folder path below it."""
    out = invoke("codeowners", str(tree), "--out-file", "-")[1]
    gitea = [(re.compile(f"^{line.split()[0]}$"), line.split()[1:]) for line in rules(out)
             if not line.startswith("/")]
    for path, owner in [("apps/shop/web.yaml", "@acme/team-shop"),
                        ("apps/shop/deep/er.yml", "@acme/team-shop"),
                        ("platform/projects/shop.yaml", "@acme/platform"),
                        ("pincompile.yaml", "@acme/platform")]:
        assert [who for rule, who in gitea if rule.match(path)] == [
            [owner, *([] if owner == "@acme/platform" else
                      ["oncall@acme.example", "@alice", "bob@acme.example"])]]
    assert not any(rule.match("apps/shoppers/x.yaml") for rule, _ in gitea
                   if "shop" in rule.pattern)


def test_check_is_0_when_current_and_1_when_stale(tree: Path) -> None:
    target = tree / "CODEOWNERS"
    assert invoke("codeowners", str(tree), "--check", "--out-file", str(target))[0] == 1  # missing
    code, out, _ = invoke("codeowners", str(tree), "--out-file", str(target))
    assert code == 0 and out.startswith(f"wrote {target}: 2 project folders")
    assert invoke("codeowners", str(tree), "--check", "--out-file", str(target))[:2] == (
        0, f"ok: {target} is current\n")
    project = tree / "platform" / "projects" / "shop.yaml"
    project.write_text(project.read_text().replace("'@alice', ", ""))
    code, out, err = invoke("codeowners", str(tree), "--check", "--out-file", str(target))
    assert code == 1
    assert "-/apps/shop/ @acme/team-shop oncall@acme.example @alice bob@acme.example" in out
    assert "+/apps/shop/ @acme/team-shop oncall@acme.example bob@acme.example" in out
    assert "is stale; run `pincompile codeowners" in err


def test_check_of_standard_output_is_a_usage_error(tree: Path) -> None:
    assert invoke("codeowners", str(tree), "--check", "--out-file", "-")[0] == 2


def test_without_platform_owners_it_refuses_with_a_located_error(tree: Path) -> None:
    (tree / "pincompile.yaml").unlink()
    code, out, err = invoke("codeowners", str(tree), "--out-file", "-")
    assert (code, out) == (1, "")
    assert "pincompile.yaml:1:1: error[repo-config]: no platformOwners" in err


def test_an_owner_that_maps_to_no_handle_is_a_located_error(tree: Path) -> None:
    project = tree / "platform" / "projects" / "shop.yaml"
    project.write_text(project.read_text().replace("'@alice'", "'@x y'"))
    code, _, err = invoke("codeowners", str(tree), "--out-file", "-")
    assert code == 1
    assert re.search(r"platform/projects/shop\.yaml:6:\d+: error\[owner-handle\]: owner "
                     r"'@x y' becomes '@x y', which is not a code-host handle", err), err


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_paths_are_relative_to_the_repository_and_the_file_lands_at_its_root(
        tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    specs = write_tree(repo / "deploy" / "specs", files({"pincompile.yaml": CONFIG}))
    git(repo, "init", "-q")
    (repo / ".github").mkdir()
    (repo / ".github" / "CODEOWNERS").write_text("# old\n")  # the one GitHub reads first
    assert invoke("codeowners", str(specs))[0] == 0
    text = (repo / ".github" / "CODEOWNERS").read_text()
    assert not (repo / "CODEOWNERS").exists()
    assert "/deploy/specs/apps/shop/ @acme/team-shop\n" in text
    assert "/.github/CODEOWNERS @acme/platform\n" in text
    assert "run `pincompile codeowners " in text


def test_examples_and_the_shipped_hook() -> None:
    code, out, _ = invoke("codeowners", str(REPO_ROOT / "examples"), "--out-file", "-")
    assert code == 0
    assert "/examples/apps/search/ @example-org/team-search search-oncall@example.com" in out
    hooks = YAML(typ="safe").load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text())
    hook = next(h for h in hooks if h["id"] == "pincompile-codeowners")
    assert (hook["entry"], hook["args"], hook["pass_filenames"]) == (
        "pincompile codeowners", ["--check", "."], False)
    assert re.search(hook["files"], "CODEOWNERS") and re.search(hook["files"], "a/b.yaml")
