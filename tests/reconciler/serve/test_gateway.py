"""``serve``'s insight store defaults to SQLite in the one cache folder the compiler and the
local fleet use."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.serve.gateway import default_store_url


@pytest.mark.parametrize(("env", "folder"), [
    ({"PINCOMPILE_CACHE": "mine", "XDG_CACHE_HOME": "xdg"}, "mine"),
    ({"PINCOMPILE_CACHE": "", "XDG_CACHE_HOME": "xdg"}, "xdg/pincompile"),
])
def test_the_default_store_is_in_the_cache_folder(env: dict[str, str], folder: str,
                                                  tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, str(tmp_path / value) if value else "")
    assert default_store_url() == f"sqlite:///{tmp_path / folder / 'insight.db'}"
