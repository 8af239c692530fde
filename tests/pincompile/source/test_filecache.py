"""The cache of loaded and parsed files: a file is loaded and parsed once (then from memory
or the disk); a corrupt, foreign or shared-writable cache is ignored, and no entry ever holds
content other than its key's."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from pincompile.cli import cli
from pincompile.compiler import Compiler, compile_path, validate_tree
from pincompile.source import treescan
from pincompile.source.filecache import ENTRY_DIR, Store
from pincompile.source.loader import read_tree
from pincompile.source.treescan import scan_ahead, scan_tree
from tests.support.specs import files, outputs, tree_files, write_tree

WEB = "apps/shop/web.yaml"


def test_one_changed_file_is_the_only_one_parsed_again(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", files())
    compiler = Compiler(Store(tmp_path / "cache"))
    compiler.compile(read_tree(root)[0], revision="test")
    (root / WEB).write_text((root / WEB).read_text() + "# edited\n")
    compiler.compile(read_tree(root)[0], revision="test")
    total = len(read_tree(root)[0])
    assert compiler.stats == {"parsed": total + 1, "memory": total - 1, "disk": 0}
    fresh = Compiler(Store(tmp_path / "cache"))  # a new process: everything from disk
    fresh.compile(read_tree(root)[0], revision="test")
    assert fresh.stats == {"parsed": 0, "memory": 0, "disk": total}


def test_a_file_edited_during_a_check_does_not_poison_the_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk knows a file by its stat; edited before it is read, its state must not be
    cached under the digest of what it held before (else a later check of that content
    reports the errors of the edit)."""
    root = write_tree(tmp_path / "repo", files())
    cache = tmp_path / "cache"
    real = time.time_ns
    monkeypatch.setattr(treescan.time, "time_ns", lambda: real() + 10**10)  # none is racy
    scan_tree(root, Store(cache))  # the stat index kept (no file's state cached yet)
    scanning = scan_ahead(root, cache)
    assert WEB not in scanning.result().raw  # known by its stat, not read
    original = (root / WEB).read_text()
    (root / WEB).write_text(original.replace("project:", "projekt:", 1))
    assert not validate_tree(root, cache_dir=cache, jobs=1, scanning=scanning).result.ok
    (root / WEB).write_text(original)
    assert validate_tree(root, cache_dir=cache, jobs=1).result.diagnostics == []


def test_corrupt_cache_entries_are_ignored(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", files())
    cache = tmp_path / "cache"
    expected = outputs(compile_path(root, revision="test", cache_dir=cache))
    entries = sorted((cache / ENTRY_DIR).rglob("*.pickle"))
    assert entries
    for i, entry in enumerate(entries):
        blob = entry.read_bytes()
        entry.write_bytes([b"", blob[:40], blob[:-1] + b"x", b"garbage"][i % 4])
    compiler = Compiler(Store(cache))
    names, walked = read_tree(root)
    assert outputs(compiler.compile(names, revision="test", loaded=walked)) == expected
    assert compiler.stats["disk"] == 0


def test_a_cache_others_can_write_is_not_read(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", files())
    cache = tmp_path / "cache"
    compile_path(root, revision="test", cache_dir=cache)
    os.chmod(cache / ENTRY_DIR, 0o777)
    compiler = Compiler(Store(cache))
    compiler.compile(read_tree(root)[0], revision="test")
    assert compiler.stats["disk"] == 0 and compiler.stats["parsed"] > 0


def test_an_entry_under_another_files_key_is_not_used(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", files())
    cache = tmp_path / "cache"
    compile_path(root, revision="test", cache_dir=cache)
    entries = sorted((cache / ENTRY_DIR).rglob("*.pickle"))
    shutil.copy(entries[0], entries[1])  # a valid entry, but of another file
    compiler = Compiler(Store(cache))
    compiler.compile(read_tree(root)[0], revision="test")
    assert compiler.stats["parsed"] == 1


def test_cli_cache_dir_and_no_cache(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", files())
    cache = tmp_path / "cache"
    runner = CliRunner()
    off = runner.invoke(cli, ["compile", str(root), "--out-dir", str(tmp_path / "a"), "-q",
                              "--revision", "r", "--no-cache", "--cache-dir", str(cache)])
    assert off.exit_code == 0 and not cache.exists()
    for out in ("b", "c"):  # cold, then warm
        done = runner.invoke(cli, ["compile", str(root), "--out-dir", str(tmp_path / out), "-q",
                                   "--revision", "r", "--cache-dir", str(cache)])
        assert done.exit_code == 0, done.output
    assert any((cache / ENTRY_DIR).rglob("*.pickle"))
    for out in ("b", "c"):
        assert tree_files(tmp_path / out) == tree_files(tmp_path / "a")


def test_the_version_in_every_key_is_the_installed_one() -> None:
    from importlib import metadata

    from pincompile.source.filecache import _installed_version

    assert _installed_version() == metadata.version("pincompile")
