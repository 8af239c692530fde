"""``pincompile set image|replicas``: one value changed in place, everything else kept;
a change that would not validate is refused and nothing is written."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from pincompile.cli import cli
from tests.support.specs import files, write_tree

WEB = "apps/shop/web.yaml"


def _repo(tmp_path: Path) -> Path:
    text = str(files()[WEB]).replace("spec:\n  replicas", "# keep me\nspec:  # and me\n  replicas")
    return write_tree(tmp_path / "repo", files({WEB: text}))


def test_set_image_changes_only_that_value(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    before = (root / WEB).read_text()
    done = CliRunner().invoke(cli, ["set", "image", "PinApp/shop/web",
                                    "main=registry.internal/shop/web:1.5.0", "-C", str(root)])
    assert done.exit_code == 0, done.output
    after = (root / WEB).read_text()
    assert after == before.replace("shop/web:1.4.2", "shop/web:1.5.0")
    assert "# keep me\nspec:  # and me\n" in after


def test_set_replicas_changes_only_that_value(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    before = (root / WEB).read_text()
    done = CliRunner().invoke(cli, ["set", "replicas", "PinApp/shop/web", "6", "-C", str(root)])
    assert done.exit_code == 0, done.output
    assert (root / WEB).read_text() == before.replace("replicas: 4", "replicas: 6", 1)


def test_an_invalid_result_is_refused_located_and_not_written(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    before = (root / WEB).read_text()
    done = CliRunner().invoke(cli, ["set", "replicas", "PinApp/shop/web", "0", "-C", str(root)])
    assert done.exit_code == 1
    assert "apps/shop/web.yaml:9:13: error[replicas-outside-scaler]" in done.output
    bad = CliRunner().invoke(cli, ["set", "image", "PinApp/shop/web", "main=BAD", "-C", str(root)])
    assert bad.exit_code == 1 and "apps/shop/web.yaml:15:16" in bad.output
    assert (root / WEB).read_text() == before


def test_usage_errors(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    runner = CliRunner()
    for args in (["image", "PinApp/shop/web", "nope"],
                 ["image", "PinApp/shop/web", "other=x:1"], ["replicas", "web", "3"]):
        done = runner.invoke(cli, ["set", *args, "-C", str(root)])
        assert done.exit_code == 2, (args, done.output)
        assert "error:" in done.output
    missing = runner.invoke(cli, ["set", "image", "PinApp/shop/wbe", "main=x:1", "-C", str(root)])
    assert missing.exit_code == 1  # not found, as in every command
    assert "did you mean 'PinApp/shop/web'?" in missing.output
