"""The stat index: unchanged files are not read again, and a changed file is always seen,
even when its size and mtime stay the same (the "racily clean" case)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from pincompile.source import treescan
from pincompile.source.filecache import Store, file_digest
from pincompile.source.loader import read_tree
from pincompile.source.treescan import scan_ahead, scan_tree
from tests.support.specs import files, write_tree

WEB = "apps/shop/web.yaml"


def _later(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """The walks run ``seconds`` from now: files written before are no longer racy."""
    real = time.time_ns
    monkeypatch.setattr(treescan.time, "time_ns", lambda: real() + int(seconds * 1e9))


def _same_size_edit(path: Path) -> None:
    """Change one byte, keeping the size and the mtime (as an edit within one timestamp
    tick would)."""
    info = path.stat()
    text = path.read_bytes()
    at = text.index(b"replicas: ") + len(b"replicas: ")
    digit = b"7" if text[at:at + 1] != b"7" else b"8"
    path.write_bytes(text[:at] + digit + text[at + 1:])
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert path.stat().st_size == info.st_size


def test_a_scan_names_what_read_tree_reads(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", files())
    os.mkfifo(root / "apps" / "pipe.yaml")  # a located warning, never read
    (root / "apps" / "out.yaml").symlink_to(tmp_path / "elsewhere.yaml")
    (tmp_path / "elsewhere.yaml").write_text("kind: PinApp\n")
    (root / "apps" / "followed").symlink_to("../platform", target_is_directory=True)
    (root / "apps" / "outside").symlink_to(tmp_path, target_is_directory=True)
    (root / "apps" / "loop").symlink_to("..", target_is_directory=True)
    read, walked = read_tree(root)
    assert any(name.startswith("apps/followed/") for name, _ in read)
    assert [w.code for w in walked.warnings] == [
        "folder-symlink-loop", "folder-symlink-outside-root", "not-a-regular-file"]
    cache = tmp_path / "cache"
    scans = [lambda: scan_tree(root, None), lambda: scan_tree(root, Store(cache)),
             lambda: scan_tree(root, Store(cache)),  # with the index the first one stored
             lambda: scan_ahead(root, cache).result()]  # in a forked process
    for walk in scans:
        scan = walk()
        assert scan.digests == [(n, file_digest(n, raw)) for n, raw in read]
        assert scan.files() == (read, [digest for _, digest in scan.digests])
        assert (scan.walked.diagnostics, scan.walked.warnings) == (walked.diagnostics,
                                                                    walked.warnings)


def test_unchanged_files_are_not_read_again(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    root = write_tree(tmp_path / "repo", files())
    store = Store(tmp_path / "cache")
    total = len(read_tree(root)[0])
    assert scan_tree(root, store).reread == total
    _later(monkeypatch, 10)
    assert scan_tree(root, store).reread == total  # the first index trusted nothing: racy
    assert scan_tree(root, store).reread == 0
    (root / WEB).write_text((root / WEB).read_text() + "# one more line\n")
    scan = scan_tree(root, store)
    assert scan.reread == 1 and dict(scan.digests)[WEB] == file_digest(
        WEB, (root / WEB).read_bytes())
    # a few files read again cost less than storing the index again: it is kept as it was
    assert scan_tree(root, store).reread == 1
    monkeypatch.setattr(treescan, "REWRITE_AFTER", 0)
    assert scan_tree(root, store).reread == 1  # stored again now
    assert scan_tree(root, store).reread == 0


def test_a_same_size_same_mtime_edit_is_seen(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    root = write_tree(tmp_path / "repo", files())
    store = Store(tmp_path / "cache")
    scan_tree(root, store)
    _same_size_edit(root / WEB)  # right after the walk: racy, so it was not trusted
    assert dict(scan_tree(root, store).digests)[WEB] == file_digest(
        WEB, (root / WEB).read_bytes())
    # trusted entries: the ctime (which no tool can set back) still gives the edit away
    _later(monkeypatch, 10)
    scan_tree(root, store)
    assert scan_tree(root, store).reread == 0
    _same_size_edit(root / WEB)
    scan = scan_tree(root, store)
    assert scan.reread == 1 and dict(scan.digests)[WEB] == file_digest(
        WEB, (root / WEB).read_bytes())


def test_a_racy_entry_is_not_trusted(tmp_path: Path) -> None:
    """An index taken within the racy margin of a file's timestamps keeps nothing of it."""
    root = write_tree(tmp_path / "repo", files())
    store = Store(tmp_path / "cache")
    scan_tree(root, store)
    index = store.read(treescan.index_key(root))
    assert index is None or WEB not in index.entries


def test_a_corrupt_index_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = write_tree(tmp_path / "repo", files())
    store = Store(tmp_path / "cache")
    _later(monkeypatch, 10)
    scan_tree(root, store)
    path = store._path(treescan.index_key(root))
    path.write_bytes(path.read_bytes()[:-3] + b"xyz")
    (root / WEB).write_text((root / WEB).read_text() + "# changed\n")
    scan = scan_tree(root, store)
    assert scan.reread == len(scan.digests)
    assert scan.digests == [(n, file_digest(n, raw)) for n, raw in read_tree(root)[0]]


def test_a_file_edited_after_the_walk_is_named_by_its_content_now(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A compile caches each file's state under its digest: a file the walk knew by its
    stat but that changed before it was read must not be cached under the old digest."""
    root = write_tree(tmp_path / "repo", files())
    store = Store(tmp_path / "cache")
    _later(monkeypatch, 10)
    scan_tree(root, store)
    scan = scan_tree(root, store)
    assert scan.reread == 0
    (root / WEB).write_text((root / WEB).read_text() + "# edited after the walk\n")
    listed, digests = scan.files()
    raw = dict(listed)[WEB]
    assert raw.endswith(b"# edited after the walk\n")
    assert dict(zip([n for n, _ in listed], digests, strict=True))[WEB] == file_digest(WEB, raw)
