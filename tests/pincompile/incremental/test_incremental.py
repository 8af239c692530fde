"""Incremental compiles (``compile --out-dir`` and ``validate`` against the snapshot in the
cache, ``serve``'s in-memory :class:`~pincompile.compiler.Compiler`): whatever they reuse,
they give the bytes, or the errors, of a cold compile, and compile only the changed apps."""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pincompile.compiler import VALIDATE_REVISION, Compiler, compile_path, validate_tree
from pincompile.diagnostics import Diagnostic
from pincompile.emit.folder import compile_to_dir
from pincompile.pipeline import run
from pincompile.source.filecache import ENTRY_DIR
from pincompile.source.loader import load_tree, read_tree
from tests.support.specs import files, outputs, tree_files, write_tree

WEB = "apps/shop/web.yaml"
JOBS = "apps/shop/jobs.yaml"
FLEET = "platform/clusters/fleet.yaml"


def _cold(root: Path, revision: str = "test"
          ) -> tuple[dict[str, str], list[Diagnostic], list[Diagnostic]]:
    return outputs(run(load_tree(root), revision=revision))


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
    elif kind == "ingress-clash" and (root / WEB).exists():
        # another app routing the same ingress host: invalid, reported at the copy
        text = (root / WEB).read_text().replace("name: web", f"name: clash{n}").replace(
            "target: web", f"target: clash{n}")
        (root / "apps" / "shop" / f"clash-{n}.yaml").write_text(text)
    elif kind == "scale-up" and target is not None:
        # a big replica count moves quota sizes, capacity sums and other apps' namespaces
        target.write_text(_replicas(target.read_text(), 40 + n))
    elif kind == "latest" and target is not None:  # a schema error in an app
        target.write_text(re.sub(r"(image: \S+?):[\w.]+\n", r"\1:latest\n", target.read_text(),
                                 count=1))
    elif kind == "bad-template" and (root / JOBS).exists():  # an expansion error in an app
        (root / JOBS).write_text((root / JOBS).read_text().replace(
            "{{ job.completions }}", "{{ job.nope }}"))
    elif kind == "bad-yaml" and target is not None:  # a file that does not load
        target.write_text(target.read_text() + "\n  bad: [\n")
    elif kind == "capacity-too-small":
        path = root / FLEET
        path.write_text(path.read_text().replace('cpu: "1000"', 'cpu: "1"'))


EDITS = st.lists(st.tuples(st.sampled_from(
    ["replicas", "image", "add", "remove", "rename", "break", "platform", "capacity-too-small",
     "ingress-clash", "scale-up", "latest", "bad-template", "bad-yaml"]),
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
        out = Path(work) / "out"
        compile_to_dir(root, out, revision="test", cache_dir=cache)
        validate_tree(root, cache_dir=cache, jobs=1)
        for kind, n in edits:
            _edit(root, kind, n)
            cold = _cold(root)
            # validate: a snapshot without output files, updated check by check
            checked = validate_tree(root, cache_dir=cache, jobs=1)
            full = run(load_tree(root), revision=VALIDATE_REVISION)
            assert (checked.result.diagnostics, checked.result.warnings) == (
                full.diagnostics, full.warnings), kind
            if full.ok:
                assert (checked.specs, checked.objects) == (len(full.catalog.entries),
                                                            len(full.manifests)), kind
            assert outputs(compile_path(root, revision="test", cache_dir=cache)) == cold, kind
            # serve: each push a commit, some of them the same as the last
            names, walked = read_tree(root)
            commit = f"commit-{n % 3}"
            kept = outputs(memory.compile(names, revision=commit, loaded=walked))
            at_commit = _cold(root, commit)
            # errors: a cold compile's (their objects are never used; found incrementally,
            # there are none)
            assert kept == at_commit if not cold[1] else kept[1:] == cold[1:], kind
            # the CLI's path: a snapshot in the cache, only changed output files written
            done = compile_to_dir(root, out, revision="test", cache_dir=cache)
            if done.result is None or not done.result.diagnostics:
                assert tree_files(out) == _cold_tree(root, Path(work) / "cold"), kind
            else:  # errors (found incrementally or not): a cold compile's, nothing written
                assert (done.result.diagnostics, done.result.warnings) == cold[1:], kind


def _cold_tree(root: Path, out: Path) -> dict[str, bytes]:
    shutil.rmtree(out, ignore_errors=True)
    done = compile_to_dir(root, out, revision="test")
    assert done.result is not None and not done.result.diagnostics
    return tree_files(out)


def test_incremental_compile_rewrites_only_the_changed_apps_files(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", files())
    out, cache = tmp_path / "out", tmp_path / "cache"
    assert compile_to_dir(root, out, revision="test", cache_dir=cache).outcome is None  # full
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*.yaml")}
    (root / WEB).write_text((root / WEB).read_text().replace("web:1.4.2", "web:1.4.3"))
    done = compile_to_dir(root, out, revision="test", cache_dir=cache)
    assert done.outcome is not None and done.outcome.units >= 1
    cold = run(load_tree(root), revision="test")
    assert (done.outcome.specs, done.outcome.objects, done.outcome.clusters) == (
        len(cold.catalog.entries), len(cold.manifests), len({m.cluster for m in cold.manifests}))
    rewritten = {p for p, t in before.items() if p.stat().st_mtime_ns != t}
    assert rewritten and all("web" in p.name for p in rewritten), rewritten
    assert len(rewritten) < len(before) / 2
    assert tree_files(out) == _cold_tree(root, tmp_path / "cold")
    # a platform change compiles everything again
    fleet = root / FLEET
    fleet.write_text(re.sub(r'cpu: "\d+"', 'cpu: "1234"', fleet.read_text(), count=1))
    assert compile_to_dir(root, out, revision="test", cache_dir=cache).outcome is None
    assert tree_files(out) == _cold_tree(root, tmp_path / "cold")


def test_an_output_tree_written_by_another_compile_is_replaced_as_a_whole(
        tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", files())
    out, cache = tmp_path / "out", tmp_path / "cache"
    compile_to_dir(root, out, revision="test", cache_dir=cache)
    compile_to_dir(root, out, revision="other")  # other content: the marker names it
    (root / WEB).write_text(_replicas((root / WEB).read_text(), 5))
    assert compile_to_dir(root, out, revision="test", cache_dir=cache).outcome is None
    assert tree_files(out) == _cold_tree(root, tmp_path / "cold")


def test_placement_json_from_parts_is_the_same_bytes(tmp_path: Path) -> None:
    from pincompile.emit.output import to_json
    from pincompile.incremental.fragments import fragment, fragments_of, placement_text

    result = compile_path(write_tree(tmp_path / "repo", files()), revision="test")
    assert result.plan is not None and result.plan.decisions
    parts = {k: fragment(d) for k, d in result.plan.decisions.items()}
    assert placement_text(result.plan, parts) == to_json(result.plan.to_json())
    assert fragments_of(to_json(result.plan.to_json())) == parts  # read back from the file


def test_placement_json_spliced_in_place_is_what_a_whole_rewrite_gives(tmp_path: Path) -> None:
    from pincompile.emit.output import to_json
    from pincompile.incremental.fragments import fragment, placement_text, splice_placement

    result = compile_path(write_tree(tmp_path / "repo", files()), revision="test")
    assert result.plan is not None and len(result.plan.decisions) >= 3
    parts = {k: fragment(d) for k, d in result.plan.decisions.items()}
    old = to_json(result.plan.to_json()).encode()
    keys = sorted(parts)
    for chosen in ([keys[0]], [keys[-1]], keys[1:3], keys):  # first, last, middle, all
        new = {k: parts[k].replace('"kind"', '"kind-x"') for k in chosen}
        spliced = splice_placement(old, result.plan, chosen, new)
        assert spliced == placement_text(result.plan, {**parts, **new}).encode(), chosen
        assert spliced != old
    # an entry that comes or goes: not spliced (the whole file is rebuilt instead)
    assert splice_placement(old, result.plan, [keys[0]], {}) is None
    assert splice_placement(old, result.plan, [], {("PinApp", "x", "new"): "{}"}) is None


def test_a_long_running_compiler_recompiles_only_changed_apps(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", files())
    compiler = Compiler()
    compiler.compile(read_tree(root)[0], revision="test")
    assert not compiler.reused  # the first compile is a full one
    (root / WEB).write_text((root / WEB).read_text().replace("web:1.4.2", "web:1.4.3"))
    names, walked = read_tree(root)
    result = compiler.compile(names, revision="test", loaded=walked)
    assert compiler.reused and outputs(result) == _cold(root)
    assert result.plan is not None and len(result.plan.decisions) == len(
        run(load_tree(root), revision="test").plan.decisions)
    fleet = root / FLEET
    fleet.write_text(re.sub(r'cpu: "\d+"', 'cpu: "1234"', fleet.read_text(), count=1))
    names, walked = read_tree(root)
    assert outputs(compiler.compile(names, revision="test", loaded=walked)) == _cold(root)
    assert not compiler.reused  # a platform change: everything again


def test_a_long_running_compiler_reports_a_broken_app_and_its_fix_incrementally(
        tmp_path: Path) -> None:
    # serve compiles every push: neither the push that breaks one app nor the one that
    # fixes it may cost a full compile of the tree
    root = write_tree(tmp_path / "repo", files())
    compiler = Compiler()
    compiler.compile(read_tree(root)[0], revision="test")
    good = (root / WEB).read_text()
    for image, valid in (("web:latest", False), ("web:2.0.0", True), ("web:latest", False),
                         ("web:1.4.2", True)):
        (root / WEB).write_text(good.replace("web:1.4.2", image))
        names, walked = read_tree(root)
        result = compiler.compile(names, revision="test", loaded=walked)
        assert compiler.reused, image
        assert result.ok == valid, image
        cold = _cold(root)
        assert outputs(result) == cold if valid else outputs(result)[1:] == cold[1:], image


def test_a_long_running_compiler_reuses_unchanged_apps_at_a_new_commit(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", files())
    compiler = Compiler()
    compiler.compile(read_tree(root)[0], revision="a" * 40)
    for n, change in enumerate((False, True), 1):  # a commit elsewhere; one app changed
        if change:
            (root / WEB).write_text(_replicas((root / WEB).read_text(), 5))
        commit = str(n) * 40
        names, walked = read_tree(root)
        result = compiler.compile(names, revision=commit, loaded=walked)
        assert compiler.reused and outputs(result) == _cold(root, commit), change
        assert {m.obj["metadata"]["annotations"]["pincompute.io/revision"]
                for m in result.manifests} == {commit}


def _entries(cache: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in (cache / ENTRY_DIR).rglob("*.pickle")}


def test_an_incremental_compile_stores_only_its_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pincompile.incremental import stored

    root = write_tree(tmp_path / "repo", files())
    out, cache = tmp_path / "out", tmp_path / "cache"
    compile_to_dir(root, out, revision="test", cache_dir=cache)
    before = _entries(cache)
    for n in (3, 4, 5):  # changes pile up on the stored snapshot
        (root / WEB).write_text(_replicas((root / WEB).read_text(), n))
        assert compile_to_dir(root, out, revision="test", cache_dir=cache).outcome is not None
        assert tree_files(out) == _cold_tree(root, tmp_path / "cold")
    after = _entries(cache)
    changed = {p for p in after if before.get(p) != after[p]}
    # the changed file's parsed entry, the stat index and the changes; the snapshot is kept
    assert all(before[p] == after[p] for p in before if p not in changed)
    assert len(changed) <= 2 + 3
    assert max(len(after[p]) for p in changed) < max(len(b) for b in before.values())
    # a corrupt delta: the stored snapshot alone no longer names OUT, so all is compiled
    for p in changed - before.keys():
        p.write_bytes(p.read_bytes()[:-5])
    (root / WEB).write_text(_replicas((root / WEB).read_text(), 6))
    assert compile_to_dir(root, out, revision="test", cache_dir=cache).outcome is None
    assert tree_files(out) == _cold_tree(root, tmp_path / "cold")
    # past the limit, the whole snapshot is stored again (and earlier changes dropped)
    monkeypatch.setattr(stored, "DELTA_LIMIT", 0)
    for n in (2, 3):
        (root / WEB).write_text(_replicas((root / WEB).read_text(), n))
        assert compile_to_dir(root, out, revision="test", cache_dir=cache).outcome
        assert tree_files(out) == _cold_tree(root, tmp_path / "cold")


def test_a_stray_or_missing_output_file_compiles_everything(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", files())
    out, cache = tmp_path / "out", tmp_path / "cache"
    compile_to_dir(root, out, revision="test", cache_dir=cache)
    some = sorted(p for p in out.rglob("*.yaml"))[0]
    stray = [some.with_name("stray.yaml"), out / "stray.yaml", some.parent / "sub" / "x.yaml",
             out / "newdir"]
    for n, path in enumerate([*stray, some]):
        if path == some:
            path.unlink()  # a missing file
        elif path.name == "newdir":
            path.mkdir()  # an empty directory nobody wrote
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("stray: true\n")
        (root / WEB).write_text(_replicas((root / WEB).read_text(), 2 + n))
        assert compile_to_dir(root, out, revision="test", cache_dir=cache).outcome is None, path
        assert tree_files(out) == _cold_tree(root, tmp_path / "cold")
        (root / WEB).write_text(_replicas((root / WEB).read_text(), 3 + n))
        assert compile_to_dir(root, out, revision="test", cache_dir=cache).outcome is not None


@pytest.mark.parametrize("kind", ["latest", "bad-template", "bad-yaml", "break"])
def test_errors_in_changed_apps_are_reported_without_a_full_compile(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """A schema, expansion or YAML error in a changed app file: the update reports exactly
    what a cold compile reports, writes nothing, and compiles nothing else again."""
    root = write_tree(tmp_path / "repo", files())
    out, cache = tmp_path / "out", tmp_path / "cache"
    compile_to_dir(root, out, revision="test", cache_dir=cache)
    before = tree_files(out)
    _edit(root, kind, 1 if kind != "bad-yaml" else 2)
    cold = _cold(root)
    assert cold[1], "the edit must make the specs invalid"
    with monkeypatch.context() as patched:
        patched.setattr(Compiler, "compile", lambda *a, **k: pytest.fail("a full compile"))
        done = compile_to_dir(root, out, revision="test", cache_dir=cache)
    assert done.result is not None and (done.result.diagnostics, done.result.warnings) == (
        cold[1], cold[2])
    assert tree_files(out) == before
    assert set(done.result.sources) >= {d.file for d in done.result.diagnostics}


def test_validate_checks_only_the_changed_apps_again(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    root = write_tree(tmp_path / "repo", files())
    cache = tmp_path / "cache"
    first = validate_tree(root, cache_dir=cache, jobs=1)
    assert first.result.ok and first.objects > 10
    for kind, n in (("replicas", 3), ("latest", 1), ("replicas", 5)):
        _edit(root, kind, n)
        full = run(load_tree(root), revision=VALIDATE_REVISION)
        with monkeypatch.context() as patched:
            patched.setattr(Compiler, "compile", lambda *a, **k: pytest.fail("a full check"))
            checked = validate_tree(root, cache_dir=cache, jobs=1)
        assert checked.result.diagnostics == full.diagnostics, kind
        assert checked.objects == (len(full.manifests) if full.ok else 0), kind
    # a platform change checks everything again
    (root / FLEET).write_text(re.sub(r'cpu: "\d+"', 'cpu: "1234"', (root / FLEET).read_text(),
                                     count=1))
    calls: list[int] = []
    real = Compiler.compile
    monkeypatch.setattr(Compiler, "compile",
                        lambda *a, **k: calls.append(1) or real(*a, **k))  # type: ignore[func-returns-value]
    assert validate_tree(root, cache_dir=cache, jobs=1).result.diagnostics == run(
        load_tree(root), revision=VALIDATE_REVISION).diagnostics
    assert calls == [1]


def test_an_edited_placement_json_is_not_spliced_into(tmp_path: Path) -> None:
    """An update splices placement.json without hashing it while its stat is the one
    written; an edit (even one of the same size) changes that, and is then caught by its
    digest: the compile is a full one, and its output that of a cold compile."""
    root = write_tree(tmp_path / "repo", files())
    out, cache = tmp_path / "out", tmp_path / "cache"
    compile_to_dir(root, out, revision="test", cache_dir=cache)
    for n in range(2):  # kept by its stat: the placement file goes on being spliced
        (root / WEB).write_text(_replicas((root / WEB).read_text(), 2 + n))
        assert compile_to_dir(root, out, revision="test", cache_dir=cache).outcome is not None
    placement = out / "placement.json"
    text = placement.read_text()
    placement.write_text(text.replace('"replicas": 1,', '"replicas": 7,', 1))
    assert placement.read_text() != text and len(placement.read_text()) == len(text)
    (root / WEB).write_text(_replicas((root / WEB).read_text(), 4))
    assert compile_to_dir(root, out, revision="test", cache_dir=cache).outcome is None
    assert tree_files(out) == _cold_tree(root, tmp_path / "cold")


def test_the_output_tree_of_a_snapshot_follows_added_and_removed_files() -> None:
    from pincompile.incremental.snapshots import tree_update

    tree = tree_update({}, (), ["placement.json", "a/ns/x.yaml", "a/ns/y.yaml", "b/_c/z.yaml"])
    assert tree == {"": {"placement.json", "a", "b"}, "a": {"ns"}, "a/ns": {"x.yaml", "y.yaml"},
                    "b": {"_c"}, "b/_c": {"z.yaml"}}
    after = tree_update(tree, ["b/_c/z.yaml", "a/ns/x.yaml", "missing/q.yaml"], ["a/n2/w.yaml"])
    assert after == {"": {"placement.json", "a"}, "a": {"ns", "n2"}, "a/ns": {"y.yaml"},
                     "a/n2": {"w.yaml"}}
    assert tree["b/_c"] == {"z.yaml"}  # the original is kept


def test_unchanged_output_directories_are_not_listed_but_strays_still_seen(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:

    from pincompile.incremental import snapshots

    root = write_tree(tmp_path / "repo", files())
    out, cache = tmp_path / "out", tmp_path / "cache"
    compile_to_dir(root, out, revision="test", cache_dir=cache)
    real = time.time_ns
    # directories recorded "10 s later": none is within the racy margin, all are trusted
    monkeypatch.setattr(snapshots.time, "time_ns", lambda: real() + 10 * 10**9)
    (root / WEB).write_text(_replicas((root / WEB).read_text(), 3))
    assert compile_to_dir(root, out, revision="test", cache_dir=cache).outcome is not None
    listed: list[str] = []
    real_listdir = os.listdir
    monkeypatch.setattr(snapshots.os, "listdir",
                        lambda p: listed.append(str(p)) or real_listdir(p))
    (root / WEB).write_text(_replicas((root / WEB).read_text(), 5))
    assert compile_to_dir(root, out, revision="test", cache_dir=cache).outcome is not None
    assert [p for p in listed if Path(p) != out] == []  # (OUT itself: the output check)
    time.sleep(0.05)  # past the filesystem's timestamp tick
    stray = sorted(p for p in out.rglob("*.yaml"))[-1].with_name("stray.yaml")
    stray.write_text("stray: true\n")
    (root / WEB).write_text(_replicas((root / WEB).read_text(), 2))
    assert compile_to_dir(root, out, revision="test", cache_dir=cache).outcome is None
    assert str(stray.parent) in listed  # the changed directory was listed: the stray found
    assert tree_files(out) == _cold_tree(root, tmp_path / "cold")


