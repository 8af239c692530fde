"""The compile cache: whatever it holds, a compile gives the bytes a cold compile gives; a
corrupt or foreign cache is ignored."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pincompile.cache import ENTRY_DIR, Store
from pincompile.cli import cli
from pincompile.diagnostics import Diagnostic
from pincompile.loader import load_tree
from pincompile.output import render_files
from pincompile.pipeline import Compiler, Result, compile_path, read_tree, run

from .conftest import files, write_tree

WEB = "apps/shop/web.yaml"
FLEET = "platform/clusters/fleet.yaml"


def _bytes(result: Result) -> tuple[dict[str, str], list[Diagnostic], list[Diagnostic]]:
    """Everything a user sees of a compile: output files, errors, warnings."""
    placement = result.plan.to_json() if result.plan is not None else None
    return (render_files(result.manifests, "yaml", placement), result.diagnostics,
            result.warnings)


def _cold(root: Path) -> tuple[dict[str, str], list[Diagnostic], list[Diagnostic]]:
    return _bytes(run(load_tree(root), revision="test"))


# --- random edit sequences ---------------------------------------------------------------

def _replicas(text: str, n: int) -> str:
    return re.sub(r"replicas: \d+", f"replicas: {n}", text, count=1)


def _edit(root: Path, kind: str, n: int) -> None:
    """One edit of the tree (each keeps the YAML readable; some make specs invalid)."""
    apps = sorted(p for p in (root / "apps").rglob("*.y*ml"))
    target = apps[n % len(apps)] if apps else None
    if kind == "replicas" and target is not None:
        target.write_text(_replicas(target.read_text(), n % 7))
    elif kind == "image" and target is not None:
        target.write_text(re.sub(r"(image: \S+?):[\w.]+\n", rf"\1:9.{n}\n", target.read_text(),
                                 count=1))
    elif kind == "add" and (root / WEB).exists():
        text = (root / WEB).read_text().replace("name: web", f"name: web{n}").replace(
            "target: web", f"target: web{n}").replace("host: web.", f"host: web{n}.")
        (root / "apps" / "shop" / f"copy-{n}.yaml").write_text(text)
    elif kind == "remove" and target is not None and len(apps) > 1:
        target.unlink()
    elif kind == "rename" and target is not None:
        target.rename(target.with_name(f"renamed-{n}-{target.name}"))
    elif kind == "break" and target is not None:
        target.write_text(target.read_text().replace("project:", "projekt:", 1))
    elif kind == "platform":
        path = root / FLEET
        path.write_text(re.sub(r'cpu: "\d+"', f'cpu: "{1000 + 7 * n}"', path.read_text(),
                               count=1))
    elif kind == "capacity-too-small":
        path = root / FLEET
        path.write_text(path.read_text().replace('cpu: "1000"', 'cpu: "1"'))


EDITS = st.lists(st.tuples(st.sampled_from(
    ["replicas", "image", "add", "remove", "rename", "break", "platform", "capacity-too-small"]),
    st.integers(0, 50)), min_size=1, max_size=4)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])
@given(EDITS)
def test_cached_compiles_are_byte_identical_to_cold_ones(tmp_path_factory: object,
                                                         edits: list[tuple[str, int]]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as work:
        root = write_tree(Path(work) / "repo", files())
        cache = Path(work) / "cache"
        memory = Compiler()  # a long-running process: one Compiler, in memory only
        compile_path(root, revision="test", cache_dir=cache)  # warm the disk cache
        memory.compile(read_tree(root)[0], revision="test")
        for kind, n in edits:
            _edit(root, kind, n)
            cold = _cold(root)
            assert _bytes(compile_path(root, revision="test", cache_dir=cache)) == cold, kind
            names, walked = read_tree(root)
            assert _bytes(memory.compile(names, revision="test", loaded=walked)) == cold, kind


def test_one_changed_file_is_the_only_one_parsed_again(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", files())
    compiler = Compiler(Store(tmp_path / "cache"))
    compiler.compile(read_tree(root)[0], revision="test")
    (root / WEB).write_text(_replicas((root / WEB).read_text(), 5))
    compiler.compile(read_tree(root)[0], revision="test")
    total = len(read_tree(root)[0])
    assert compiler.stats == {"parsed": total + 1, "memory": total - 1, "disk": 0}
    fresh = Compiler(Store(tmp_path / "cache"))  # a new process: everything from disk
    fresh.compile(read_tree(root)[0], revision="test")
    assert fresh.stats == {"parsed": 0, "memory": 0, "disk": total}


def test_corrupt_cache_entries_are_ignored(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", files())
    cache = tmp_path / "cache"
    expected = _bytes(compile_path(root, revision="test", cache_dir=cache))
    entries = sorted((cache / ENTRY_DIR).rglob("*.pickle"))
    assert entries
    for i, entry in enumerate(entries):
        blob = entry.read_bytes()
        entry.write_bytes([b"", blob[:40], blob[:-1] + b"x", b"garbage"][i % 4])
    compiler = Compiler(Store(cache))
    names, walked = read_tree(root)
    assert _bytes(compiler.compile(names, revision="test", loaded=walked)) == expected
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
    off = runner.invoke(cli, ["compile", str(root), "-o", str(tmp_path / "a"), "-q",
                              "--revision", "r", "--no-cache", "--cache-dir", str(cache)])
    assert off.exit_code == 0 and not cache.exists()
    for out in ("b", "c"):  # cold, then warm
        done = runner.invoke(cli, ["compile", str(root), "-o", str(tmp_path / out), "-q",
                                   "--revision", "r", "--cache-dir", str(cache)])
        assert done.exit_code == 0, done.output
    assert any((cache / ENTRY_DIR).rglob("*.pickle"))
    for out in ("b", "c"):
        assert _tree(tmp_path / out) == _tree(tmp_path / "a")


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
            if p.is_file()}
