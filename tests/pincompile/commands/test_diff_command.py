"""``pincompile diff`` on a temporary git repository with two commits.

Most tests compile with a stand-in expansion (``toy_pipeline``) so they exercise the
command — git, both sides, formats, exit codes — independently of the real expansion;
``test_real_pipeline_*`` run the real compiler end to end.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from pincompile.cli import cli
from tests.support.tiny_repo import CART, CART_REFORMATTED, CART_V2, FILES, Repo

pytestmark = pytest.mark.usefixtures("toy_pipeline")

CART_FILE = "specs/apps/shop/cart.yaml"


def diff(repo: Repo, *args: str, path: str = "specs") -> Result:
    """``pincompile diff ARGS <repo>/<path>``, in-process."""
    return CliRunner().invoke(cli, ["diff", *args, str(repo.root / path)],
                              catch_exceptions=False)


@pytest.fixture
def two_commits(repo: Repo) -> tuple[str, str]:
    """Commit 2 of the brief: replicas 2 → 4 and a new label."""
    first = repo.git("rev-parse", "HEAD")
    second = repo.commit({CART_FILE: CART_V2}, "cart: more replicas, a label")
    return first, second


def test_two_commits(repo: Repo, two_commits: tuple[str, str]) -> None:
    first, second = two_commits
    result = diff(repo, "--base", first, "--head", second)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "cluster east-a: 0 added, 1 changed, 0 removed" in out
    assert "cluster east-b: 0 added, 1 changed, 0 removed" in out
    assert "  ~ changed  Deployment shop/cart" in out
    assert '      metadata.labels.tier-1: added "true"' in out
    assert "      spec.replicas: 1 → 2" in out
    assert "--- a/east-a/shop/deployment-cart.yaml\n+++ b/east-a/shop/deployment-cart.yaml" in out
    assert "-  replicas: 1\n+  replicas: 2" in out
    assert "+    tier-1: 'true'" in out
    assert out.rstrip().endswith(
        "2 objects differ in 2 of 2 clusters: 0 added, 2 changed, 0 removed (2 unchanged)")


def test_added_and_removed(repo: Repo) -> None:
    first = repo.git("rev-parse", "HEAD")
    repo.commit({"specs/apps/shop/cart.yaml": None,
                 "specs/apps/shop/checkout.yaml": CART.replace("name: cart", "name: checkout")},
                "rename the app")
    result = diff(repo, "--base", first, "--head", "HEAD", "--stat")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[:2] == ["touches: project shop (owners: team-shop)", ""]  # the review aid
    assert lines[2:5] == ["cluster east-a: 1 added, 0 changed, 1 removed",
                         "  - removed  Deployment shop/cart",
                         "  + added    Deployment shop/checkout"]
    assert "@@" not in result.output


def test_exit_code(repo: Repo, two_commits: tuple[str, str]) -> None:
    first, second = two_commits
    assert diff(repo, "--base", first, "--head", second, "--exit-code").exit_code == 1
    same = diff(repo, "--base", second, "--head", second, "--exit-code")
    assert same.exit_code == 0
    assert same.output == "no differences: 4 objects in 2 clusters unchanged\n"
    quiet = diff(repo, "--base", first, "--head", second, "-q")
    assert quiet.exit_code == 1 and quiet.output == ""


def test_reformatting_and_comments_show_nothing(repo: Repo) -> None:
    first = repo.git("rev-parse", "HEAD")
    repo.commit({CART_FILE: CART_REFORMATTED,
                 "specs/platform/project.yaml": "# the shop team\n" + FILES[
                     "platform/project.yaml"]}, "reformat")
    result = diff(repo, "--base", first, "--head", "HEAD", "--exit-code")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("no differences")


def test_dirty_working_tree_is_the_default_head(repo: Repo) -> None:
    repo.write({CART_FILE: CART_V2})
    result = diff(repo, "--base", "HEAD", "--exit-code")
    assert result.exit_code == 1, result.output
    assert "spec.replicas: 1 → 2" in result.output
    # untracked files count too: the working tree is compiled as it is
    repo.write({CART_FILE: CART, "specs/apps/shop/new.yaml": CART.replace("cart", "new")})
    result = diff(repo, "--base", "HEAD", "--stat")
    assert "+ added    Deployment shop/new" in result.output


def test_head_ref_ignores_the_dirty_tree(repo: Repo, two_commits: tuple[str, str]) -> None:
    first, second = two_commits
    repo.write({CART_FILE: "this: is: not: yaml"})
    result = diff(repo, "--base", first, "--head", second, "--exit-code")
    assert result.exit_code == 1 and "spec.replicas: 1 → 2" in result.output


def test_markdown(repo: Repo, two_commits: tuple[str, str]) -> None:
    first, _ = two_commits
    result = diff(repo, "--base", first, "--head", "main", "-o", "markdown")
    assert result.exit_code == 0, result.output
    md = result.output
    assert md.startswith(f"### pincompile diff\n\n`{first}` → `main @ ")
    assert "#### `east-a` — 0 added, 1 changed, 0 removed" in md
    assert "| 🟡 changed | Deployment | shop | cart |" in md
    assert "<details><summary>~ Deployment shop/cart</summary>" in md
    assert "```diff\n--- a/east-a/shop/deployment-cart.yaml" in md


def test_json(repo: Repo, two_commits: tuple[str, str]) -> None:
    first, second = two_commits
    result = diff(repo, "--base", first, "--head", second, "-o", "json")
    data = json.loads(result.output)
    assert data["base"] == {"ref": first, "sha": first, "worktree": False}
    assert data["head"]["sha"] == second
    assert data["summary"] == {"added": 0, "changed": 2, "removed": 0, "unchanged": 2}
    assert {c["cluster"] for c in data["changes"]} == {"east-a", "east-b"}


def test_cluster_filter(repo: Repo, two_commits: tuple[str, str]) -> None:
    first, second = two_commits
    result = diff(repo, "--base", first, "--head", second, "--cluster", "east-b")
    assert "cluster east-b" in result.output and "east-a" not in result.output
    bad = diff(repo, "--base", first, "--head", second, "--cluster", "west-z")
    assert bad.exit_code == 2
    assert "unknown cluster west-z; clusters: east-a, east-b" in bad.output


def test_unknown_ref_is_a_usage_error(repo: Repo) -> None:
    result = diff(repo, "--base", "origin/main")
    assert result.exit_code == 2
    assert "error: unknown revision 'origin/main'" in result.output
    assert "git fetch origin main" in result.output
    assert "Traceback" not in result.output


def test_not_a_git_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["diff", "--base", "HEAD"])
    assert result.exit_code == 2 and "not inside a git work tree" in result.output


def test_head_failing_to_compile(repo: Repo) -> None:
    repo.write({CART_FILE: CART.replace("replicas: 2", "replicas: lots")})
    result = diff(repo, "--base", "HEAD")
    assert result.exit_code == 1
    assert "error: head (working tree) does not compile: 1 error" in result.output
    assert "apps/shop/cart.yaml:8:13: error[invalid-type]" in result.output
    assert "Traceback" not in result.output


def test_base_failing_to_compile(repo: Repo) -> None:
    bad = repo.commit({CART_FILE: CART.replace("image: registry.internal/shop/cart:1.0.0",
                                               "image: registry.internal/shop/cart:latest")},
                      "broken")
    fixed = repo.commit({CART_FILE: CART}, "fixed")
    result = diff(repo, "--base", bad, "--head", fixed)
    assert result.exit_code == 1
    assert f"error: base ({bad}) does not compile: 1 error — the diff needs both sides to " \
           "compile" in result.output
    assert "apps/shop/cart.yaml:" in result.output and ":latest" in result.output
    md = diff(repo, "--base", bad, "--head", fixed, "-o", "markdown")
    assert md.exit_code == 1
    assert f"**❌ base ({bad}) does not compile: 1 error" in md.output
    assert "```text\napps/shop/cart.yaml:" in md.output
    js = diff(repo, "--base", bad, "--head", fixed, "-o", "json")
    payload = json.loads(js.stdout)
    assert payload["failed"] == ["base"] and payload["diagnostics"]["base"][0]["file"] == (
        "apps/shop/cart.yaml")


def test_spec_folder_missing_on_one_side(repo: Repo) -> None:
    first = repo.git("rev-parse", "HEAD")
    repo.commit({f"more/{k}": v for k, v in FILES.items()}, "a second tree")
    result = diff(repo, "--base", first, "--head", "HEAD", "--stat", path="more")
    assert result.exit_code == 0, result.output
    assert "note: more/ does not exist in base" in result.output
    assert "+ added    Deployment shop/cart" in result.output
    gone = diff(repo, "--base", first, "--head", "HEAD", path="nowhere")
    assert gone.exit_code == 2 and "exists neither" in gone.output


def test_color(repo: Repo, two_commits: tuple[str, str]) -> None:
    first, second = two_commits
    colored = diff(repo, "--base", first, "--head", second, "--color", "always")
    assert "\x1b[32m+  replicas: 2\x1b[0m" in colored.output
    plain = diff(repo, "--base", first, "--head", second)  # not a terminal: auto → plain
    assert "\x1b[" not in plain.output


def test_help_teaches() -> None:
    result = CliRunner().invoke(cli, ["diff", "--help"])
    assert result.exit_code == 0
    assert "pincompile diff --base origin/main" in result.output
    assert "-o markdown" in result.output and "--exit-code" in result.output
