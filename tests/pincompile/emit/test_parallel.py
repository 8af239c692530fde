"""A compile split over processes (``-j``): it writes the bytes one process writes and
reports what one process reports (files loaded elsewhere, two specs making one object
across processes)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from pincompile.cli import cli
from pincompile.compiler import Compiler
from pincompile.emit import parallel
from pincompile.emit.folder import compile_to_dir
from pincompile.emit.output import render_files, render_stream
from pincompile.forked import ForkedBatches
from pincompile.pipeline import run
from pincompile.source import readahead
from pincompile.source.loader import load_tree, read_tree
from tests.support.specs import files, write_tree

REPO = Path(__file__).resolve().parents[3]


def _tree(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes()
            for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("jobs", [2, 3])
def test_processes_write_the_bytes_of_one_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int) -> None:
    root = REPO / "examples"
    one, many = tmp_path / "one", tmp_path / "many"
    compile_to_dir(root, one, revision="test", jobs=1)
    monkeypatch.setattr(parallel, "SMALL", 1)  # split even this small tree
    done = compile_to_dir(root, many, revision="test", jobs=jobs)
    assert done.result is not None and not done.result.diagnostics
    written = _tree(many)
    assert written == _tree(one)
    cold = run(load_tree(root), revision="test")
    expected = render_files(cold.manifests, "yaml", cold.plan.to_json())
    assert {p: t.encode() for p, t in expected.items()} == {
        p: t for p, t in written.items() if p != ".pincompile-output"}
    assert done.objects == len(cold.manifests) > 100
    assert done.clusters == len({m.cluster for m in cold.manifests})


POD = """\
apiVersion: pincompute.io/v1
kind: PinPod
metadata: {name: %s, project: shop}
spec:
  placement: {zones: [us-east-1a]}
  containers: [{name: main, image: registry.internal/x:1.0.0}]
  volumes: [{name: %s, type: ebs, size: 1Gi, mountPath: /data}]
"""


def test_one_object_from_two_processes_is_an_error_and_nothing_is_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # PinPod a's volume b-data and PinPod a-b's volume data are both PVC a-b-data
    root = write_tree(tmp_path / "repo", files({
        "apps/shop/a.yaml": POD % ("a", "b-data"), "apps/shop/b.yaml": POD % ("a-b", "data")}))
    expected = [(d.file, d.line, d.code, d.message) for d in run(load_tree(root)).diagnostics]
    assert [e[:3] for e in expected] == [("apps/shop/b.yaml", 3, "duplicate-object")]
    monkeypatch.setattr(parallel, "SMALL", 1)
    for jobs in (1, 2, 4):
        out = tmp_path / f"out-{jobs}"
        done = compile_to_dir(root, out, revision="test", jobs=jobs)
        assert done.result is not None
        assert [(d.file, d.line, d.code, d.message) for d in done.result.diagnostics] == expected
        assert not out.exists()
        assert not list(tmp_path.glob(f".out-{jobs}.tmp-*"))  # the half-written tree is gone


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_the_stream_is_the_same_from_processes(
        monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
    root = REPO / "examples"
    cold = run(load_tree(root), revision="test")
    monkeypatch.setattr(parallel, "SMALL", 1)
    args = ["compile", str(root), "--out-dir", "-", "--revision", "test", "--no-cache", "-q",
            "-o", fmt]
    for jobs in ("1", "3"):
        result = CliRunner().invoke(cli, [*args, "-j", jobs])
        assert result.exit_code == 0, result.output
        assert result.stdout == render_stream(cold.manifests, fmt)
    one = CliRunner().invoke(cli, [*args, "-j", "3", "--cluster", "use1a-general-01"])
    assert one.stdout == render_stream(
        [m for m in cold.manifests if m.cluster == "use1a-general-01"], fmt)


def test_files_loaded_and_checked_in_other_processes_report_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # errors of every stage: YAML (a tab), schema, a check and placement
    broken = files({
        "apps/shop/tab.yaml": "kind: PinApp\n\tbad: 1\n",
        "apps/shop/web.yaml": files()["apps/shop/web.yaml"].replace("replicas: 4",
                                                                    "replicas: many"),
        "apps/shop/jobs.yaml": files()["apps/shop/jobs.yaml"].replace(
            "image: registry.internal/shop/indexer:2.0.0", "image: registry.internal/x"),
    })
    root = write_tree(tmp_path / "repo", broken)
    one = Compiler(remember=False).compile(read_tree(root)[0], revision="test")
    assert len(one.diagnostics) >= 3
    monkeypatch.setattr(readahead, "LOAD_AHEAD_MIN", 1)
    for jobs, at_least in ((2, 250), (3, 0)):  # files all loaded ahead, or some here
        monkeypatch.setattr(readahead, "LOADED_WHILE_IMPORTING", at_least)
        many = Compiler(remember=False, jobs=jobs).compile(read_tree(root)[0], revision="test")
        assert many.diagnostics == one.diagnostics
        assert [e.resource.key for e in many.catalog.entries] == [
            e.resource.key for e in one.catalog.entries]


def test_validate_reports_the_same_from_processes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = write_tree(tmp_path / "repo", files({
        "apps/shop/a.yaml": POD % ("a", "b-data"), "apps/shop/b.yaml": POD % ("a-b", "data"),
        "apps/shop/web.yaml": files()["apps/shop/web.yaml"].replace("replicas: 4",
                                                                    "replicas: many")}))
    args = ["validate", str(root), "--no-cache", "-o", "json"]
    one = CliRunner().invoke(cli, [*args, "-j", "1"])
    monkeypatch.setattr(parallel, "SMALL", 1)
    monkeypatch.setattr(readahead, "LOAD_AHEAD_MIN", 1)
    many = CliRunner().invoke(cli, [*args, "-j", "3"])
    assert one.exit_code == many.exit_code == 1
    assert "duplicate-object" in one.stdout and "replicas" in one.stdout
    assert many.stdout == one.stdout
    valid = CliRunner().invoke(cli, ["validate", str(REPO / "examples"), "--no-cache"])
    cold = run(load_tree(REPO / "examples"), revision="validate")
    assert valid.exit_code == 0
    assert f"{len(cold.manifests)} objects would be generated" in valid.stdout


def test_the_tree_written_without_a_cache_is_the_same_from_processes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # files loaded ahead in small batches by another process, chunks drawn by three
    monkeypatch.setattr(parallel, "SMALL", 1)
    monkeypatch.setattr(readahead, "LOAD_AHEAD_MIN", 1)
    monkeypatch.setattr(readahead, "LOADED_WHILE_IMPORTING", 0)
    monkeypatch.setattr(readahead, "BATCH", 3)
    trees = {}
    for jobs in ("1", "3"):
        out = tmp_path / f"out-{jobs}"
        result = CliRunner().invoke(cli, ["compile", str(REPO / "examples"), "--out-dir", str(out),
                                          "--revision", "test", "--no-cache", "-q", "-j", jobs])
        assert result.exit_code == 0, result.output
        trees[jobs] = _tree(out)
    assert trees["1"] == trees["3"]
    assert len(trees["1"]) > 100


def _batches_then_failure(n: int) -> Iterator[list[int]]:
    for i in range(n):
        yield [i] * 1000
    raise ValueError("no more")


def test_batches_come_in_order_and_a_failure_after_them() -> None:
    batches = ForkedBatches(_batches_then_failure, 5)
    assert [batches.next() for _ in range(5)] == [[i] * 1000 for i in range(5)]
    with pytest.raises(RuntimeError, match="ValueError: no more"):
        batches.next()
    assert batches.next() is None
