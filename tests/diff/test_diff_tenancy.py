"""``pincompile diff`` and tenancy: a change that breaks the folder rule does not compile;
the review aid names the projects and owners a change touches and calls out what widens a
project's rights."""

from __future__ import annotations

from click.testing import CliRunner, Result
from diff_helpers import PROJECT, Repo

from pincompile.cli import cli

PWN = PROJECT.replace("name: shop", "name: pwn")


def diff(repo: Repo, *args: str) -> Result:
    return CliRunner().invoke(cli, ["diff", *args, str(repo.root / "specs")],
                              catch_exceptions=False)


def test_a_platform_kind_in_a_project_folder_fails_the_diff(repo: Repo) -> None:
    repo.write({"specs/apps/shop/pwn.yaml": PWN})
    result = diff(repo, "--base", "HEAD")
    assert result.exit_code == 1
    assert "head (working tree) does not compile: 1 error" in result.output
    assert "apps/shop/pwn.yaml:2:7: error[wrong-folder]: Project is a platform kind" in (
        result.output)
