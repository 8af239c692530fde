"""One cache folder for everything pincompile can make again: ``$PINCOMPILE_CACHE``, else
``$XDG_CACHE_HOME/pincompile`` (what the compile cache always honoured), else
``~/.cache/pincompile``; the local fleet's kubeconfig has a place in it commands know."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from pincompile.cachedir import cache_root, local_fleet_kubeconfig
from pincompile.cli import cli
from pincompile.source.filecache import ENTRY_DIR
from tests.support.specs import files, write_tree


@pytest.mark.parametrize(("env", "root"), [
    ({"PINCOMPILE_CACHE": "{t}/mine", "XDG_CACHE_HOME": "{t}/xdg"}, "{t}/mine"),
    ({"XDG_CACHE_HOME": "{t}/xdg"}, "{t}/xdg/pincompile"),
    ({"PINCOMPILE_CACHE": "", "XDG_CACHE_HOME": ""}, "{t}/home/.cache/pincompile"),
])
def test_the_cache_root_and_what_lives_in_it(env: dict[str, str], root: str, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("PINCOMPILE_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.setenv(name, env.get(name, "").format(t=tmp_path))
    assert cache_root() == Path(root.format(t=tmp_path))
    assert local_fleet_kubeconfig() == Path(root.format(t=tmp_path)) / "fleet" / "kubeconfig"


@pytest.mark.parametrize("variable", ["PINCOMPILE_CACHE", "XDG_CACHE_HOME"])
def test_validate_keeps_its_cache_where_the_environment_says(variable: str,
                                                            tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", files())
    other = "XDG_CACHE_HOME" if variable == "PINCOMPILE_CACHE" else "PINCOMPILE_CACHE"
    done = CliRunner().invoke(cli, ["validate", "-q", str(root)],
                              env={variable: str(tmp_path / "cache"), other: ""})
    assert done.exit_code == 0, done.output
    kept = tmp_path / "cache" / ("pincompile" if variable == "XDG_CACHE_HOME" else "")
    assert any((kept / ENTRY_DIR).rglob("*.pickle"))
