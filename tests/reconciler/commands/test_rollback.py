"""`rollback` puts one app's spec document back as it was at a revision (its comments with
it, the other documents of its file and the rest of the tree untouched), validated, as a
diff to commit (`--commit` commits it); afterwards `diff --base` that revision shows none
of the app's objects. `history --diff` shows what changed in the spec between two
revisions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pincompile.cli import cli
from tests.support.fleet import spec_repo
from tests.support.git import git

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
APP = "PinApp/search/search-api"
SPEC = Path("apps/search/search-api.yaml")
OLD_IMAGE = "registry.internal/search/api:1.4.2"
NEW_IMAGE = "registry.internal/search/api:9.9.9"


def run(*args: str) -> object:
    return CliRunner().invoke(cli, list(args))


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    """The examples at a first commit, then an image change and a PinScaler change (in
    the same file) at a second; the first commit's sha."""
    source = tmp_path / "source"
    shutil.copytree(EXAMPLES, source)
    root = spec_repo(source, tmp_path / "repo")
    first = git(root, "rev-parse", "HEAD")
    assert run("set", "image", APP, f"main={NEW_IMAGE}", "-C", str(root)).exit_code == 0
    spec = root / SPEC
    spec.write_text(spec.read_text().replace("maxReplicas: 60 ", "maxReplicas: 50 "))
    git(root, "commit", "-qam", "search-api 9.9.9, scaler to 50")
    return root, first


def objects_changed_since(root: Path, base: str) -> set[tuple[str, str]]:
    done = CliRunner().invoke(cli, ["diff", "--base", base, str(root), "-o", "json"])
    return {(c["kind"], c["name"]) for c in json.loads(done.stdout)["changes"]}


def test_rollback_puts_the_app_back_and_leaves_the_rest(repo: tuple[Path, str]) -> None:
    root, first = repo
    assert ("Deployment", "search-api") in objects_changed_since(root, first)
    done = CliRunner().invoke(cli, ["rollback", APP, "--to", first[:12], "-C", str(root)])
    assert done.exit_code == 0, done.output
    assert f"-        image: {NEW_IMAGE}\n+        image: {OLD_IMAGE}\n" in done.stdout
    text = (root / SPEC).read_text()
    assert OLD_IMAGE in text and "maxReplicas: 50 " in text  # the PinScaler's change stays
    assert "# keep off the GPU-only zone" in text  # the document's comments came back too
    # the app's objects are those of the revision: only the PinScaler's HPA differs
    assert ("Deployment", "search-api") not in objects_changed_since(root, first)
    assert git(root, "status", "--porcelain") == f"M {SPEC}"
    again = CliRunner().invoke(cli, ["rollback", APP, "--to", first, "-C", str(root)])
    assert again.exit_code == 0 and "nothing to roll back" in again.stderr


def test_rollback_commit_commits_that_file_only(repo: tuple[Path, str]) -> None:
    root, first = repo
    (root / "README.extra").write_text("not part of the rollback\n")
    done = CliRunner().invoke(cli, ["rollback", APP, "--to", first, "-C", str(root),
                                    "--commit"])
    assert done.exit_code == 0, done.output
    assert git(root, "log", "-1", "--format=%s") == f"rollback {APP} to {first[:12]}"
    assert git(root, "show", "--name-only", "--format=", "HEAD") == str(SPEC)
    assert git(root, "status", "--porcelain") == "?? README.extra"


def test_a_rollback_that_would_not_validate_writes_nothing(repo: tuple[Path, str]) -> None:
    root, first = repo
    # since the first commit the logging sidecar is gone, with every app asking for it
    (root / "platform" / "sidecars" / "logging.yaml").unlink()
    for path in (root / "apps").rglob("*.yaml"):
        path.write_text(path.read_text().replace("sidecars: [logging]", "sidecars: []"))
    git(root, "commit", "-qam", "no more logging sidecar")
    before = (root / SPEC).read_text()
    done = CliRunner().invoke(cli, ["rollback", APP, "--to", first, "-C", str(root)])
    assert done.exit_code == 1 and "logging" in done.output
    assert "refused: the specs would not validate" in done.stderr
    assert (root / SPEC).read_text() == before


def test_rollback_to_a_revision_without_the_app_or_no_revision(repo: tuple[Path, str]
                                                               ) -> None:
    root, _ = repo
    missing = CliRunner().invoke(cli, ["rollback", "PinApp/search/nope", "--to", "HEAD",
                                       "-C", str(root)])
    assert missing.exit_code == 1 and "is not in the specs at" in missing.stderr
    unknown = CliRunner().invoke(cli, ["rollback", APP, "--to", "v9", "-C", str(root)])
    assert unknown.exit_code == 2 and "unknown revision 'v9'" in unknown.stderr


def test_history_diff_shows_what_changed_in_the_spec(repo: tuple[Path, str]) -> None:
    root, first = repo
    done = CliRunner().invoke(cli, ["history", APP, "--diff", f"{first}..HEAD", "-C",
                                    str(root)])
    assert done.exit_code == 0, done.output
    assert f"-        image: {OLD_IMAGE}\n+        image: {NEW_IMAGE}\n" in done.stdout
    assert "maxReplicas" not in done.stdout  # another document's change
    none = CliRunner().invoke(cli, ["history", APP, "--diff", "HEAD", "-C", str(root)])
    assert none.exit_code == 0 and "no change between" in none.stderr
