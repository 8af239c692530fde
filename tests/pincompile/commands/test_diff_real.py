"""``pincompile diff`` end to end with the real compiler (placement and expansion)."""

from __future__ import annotations

import json

from click.testing import CliRunner, Result

from pincompile.cli import cli
from pincompile.emit.compare import VOLATILE_ANNOTATIONS
from tests.support.tiny_repo import CART_REFORMATTED, CART_V2, FILES, Repo

CART_FILE = "specs/apps/shop/cart.yaml"


def diff(repo: Repo, *args: str) -> Result:
    return CliRunner().invoke(cli, ["diff", *args, str(repo.root / "specs")],
                              catch_exceptions=False)


def test_the_annotations_diff_treats_specially_are_the_ones_expansion_writes() -> None:
    from pincompile.expand.context import ANNOTATION_REVISION, ANNOTATION_SOURCE

    assert ANNOTATION_REVISION in VOLATILE_ANNOTATIONS
    assert ANNOTATION_SOURCE not in VOLATILE_ANNOTATIONS  # moving a spec is a change


def test_replicas_and_label_change_between_two_commits(repo: Repo) -> None:
    first = repo.git("rev-parse", "HEAD")
    second = repo.commit({CART_FILE: CART_V2}, "cart: 4 replicas, tier-1 label")
    result = diff(repo, "--base", first, "--head", second, "-o", "json", "--exit-code")
    assert result.exit_code == 1, result.output
    data = json.loads(result.output)
    assert data["summary"]["added"] == data["summary"]["removed"] == 0
    assert data["summary"]["unchanged"] > 0  # a new revision alone changes nothing
    deployments = [c for c in data["changes"] if c["kind"] == "Deployment"]
    assert {c["cluster"] for c in deployments} == {"east-a", "east-b"}
    replicas = {c["cluster"]: [p for p in c["changedPaths"] if p.startswith("spec.replicas:")]
                for c in deployments}
    after = sum(int(p[0].rsplit("→ ", 1)[1]) for p in replicas.values())
    before = sum(int(p[0].split(": ", 1)[1].split(" →")[0]) for p in replicas.values())
    assert (before, after) == (2, 4)
    for change in data["changes"]:  # the label reaches every object of the app
        assert 'metadata.labels.tier-1: added "true"' in change["changedPaths"]
        assert "+    tier-1: 'true'" in change["diff"]

    text = diff(repo, "--base", first, "--head", second)
    assert "cluster east-a:" in text.output and "~ changed  Deployment shop/cart" in text.output
    assert "+++ b/east-a/shop/deployment-cart.yaml" in text.output


def test_reformatted_specs_compile_to_the_same_objects(repo: Repo) -> None:
    first = repo.git("rev-parse", "HEAD")
    repo.commit({CART_FILE: CART_REFORMATTED,
                 "specs/platform/runtime.yaml": "# identity only\n" + FILES[
                     "platform/runtime.yaml"]}, "reformat")
    result = diff(repo, "--base", first, "--head", "HEAD", "--exit-code")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("no differences: ")
    assert not result.output.startswith("no differences: 0 objects")


def test_markdown_comment_for_a_dirty_tree(repo: Repo) -> None:
    repo.write({CART_FILE: CART_V2})
    result = diff(repo, "--base", "main", "-o", "markdown")
    assert result.exit_code == 0, result.output
    assert "→ `working tree`" in result.output
    assert "| 🟡 changed | Deployment | shop | cart |" in result.output


def test_moving_a_spec_to_another_file_shows_in_the_source_annotation(repo: Repo) -> None:
    first = repo.git("rev-parse", "HEAD")
    repo.commit({CART_FILE: None, "specs/apps/shop/web/cart.yaml": FILES["apps/shop/cart.yaml"]},
                "move")
    result = diff(repo, "--base", first, "--head", "HEAD", "-o", "json")
    changes = json.loads(result.output)["changes"]
    assert changes and {c["action"] for c in changes} == {"changed"}
    for change in changes:
        assert change["changedPaths"] == [
            'metadata.annotations["pincompute.io/source"]: "apps/shop/cart.yaml" → '
            '"apps/shop/web/cart.yaml"']
