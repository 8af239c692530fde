"""``pincompile compile``: output tree, determinism, filtering, streaming, errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml
from click.testing import CliRunner, Result

from pincompile.commands.compile import compile_cmd
from pincompile.compiler import compile_path
from pincompile.emit.output import MARKER, PLACEMENT_FILE
from tests.support.expand import siblings_left


def run(*args: str) -> Result:
    return CliRunner().invoke(compile_cmd, [*args, "--revision", "r1"])


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_writes_tree_and_placement(fleet_repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run(str(fleet_repo), "--out-dir", str(out))
    assert result.exit_code == 0, result.output
    files = tree(out)
    assert MARKER in files
    assert "east-133/search/deployment-search-api.yaml" in files
    assert "west-128/_cluster/priorityclass-pincompute-reserved.yaml" in files
    compiled = compile_path(fleet_repo, revision="r1")
    assert json.loads(files[PLACEMENT_FILE]) == json.loads(json.dumps(
        compiled.plan.to_json(), default=str))
    for rel, data in files.items():
        if rel.endswith(".yaml"):
            obj = yaml.safe_load(data)
            cluster, ns, name = rel.split("/")
            assert obj["metadata"]["labels"]["pincompute.io/cluster"] == cluster
            assert ns == obj["metadata"].get("namespace", "_cluster")
            assert name == f"{obj['kind'].lower()}-{obj['metadata']['name']}.yaml"
    assert "compiled" in result.stderr and "objects" in result.stderr


def test_twice_gives_identical_bytes(fleet_repo: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    assert run(str(fleet_repo), "--out-dir", str(first)).exit_code == 0
    assert run(str(fleet_repo), "--out-dir", str(second)).exit_code == 0
    assert tree(first) == tree(second)
    assert run(str(fleet_repo), "--out-dir", str(first)).exit_code == 0  # over its own output
    assert tree(first) == tree(second)


def test_cluster_limits_output(fleet_repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run(str(fleet_repo), "--out-dir", str(out), "--cluster", "west-128").exit_code == 0
    clusters = {p.name for p in out.iterdir() if p.is_dir()}
    assert clusters == {"west-128"}
    result = run(str(fleet_repo), "--out-dir", str(out), "--cluster", "nope")
    assert result.exit_code == 2
    assert "unknown cluster nope" in result.stderr and "east-133" in result.stderr


def test_stdout_stream(fleet_repo: Path) -> None:
    result = run(str(fleet_repo), "--out-dir", "-", "--cluster", "east-133")
    assert result.exit_code == 0, result.output
    docs = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert docs and all(d["metadata"]["labels"]["pincompute.io/cluster"] == "east-133"
                        for d in docs)
    assert "# east-133/search/deployment-search-api.yaml" in result.stdout
    as_json = json.loads(run(str(fleet_repo), "--out-dir", "-", "--cluster", "east-133",
                             "-o", "json").stdout)
    assert as_json["kind"] == "List" and as_json["items"] == docs


def test_the_installed_command_prints_the_whole_stream_and_exits_at_once(
        fleet_repo: Path) -> None:
    """``main`` ends compile with ``os._exit`` (no heap teardown): stdout must still be
    flushed whole, and the exit code kept."""
    args = [sys.executable, "-m", "pincompile.cli", "compile", str(fleet_repo), "--out-dir", "-",
            "--revision", "r1", "-q"]
    buffered = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120, env=buffered)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == run(str(fleet_repo), "--out-dir", "-", "-q").stdout
    assert proc.stdout.count("\n---\n") > 10
    bad = subprocess.run([*args[:4], str(fleet_repo / "no-such-dir"), *args[5:]],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "does not exist" in bad.stderr


def test_json_format_files(fleet_repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run(str(fleet_repo), "--out-dir", str(out), "-o", "json").exit_code == 0
    deployment = out / "east-133/search/deployment-search-api.json"
    assert json.loads(deployment.read_text())["kind"] == "Deployment"
    assert not list(out.rglob("*.yaml"))


def test_nothing_written_on_error(fleet_repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run(str(fleet_repo), "--out-dir", str(out)).exit_code == 0
    before = tree(out)
    bad = fleet_repo / "apps/search/search-api.yaml"
    bad.write_text(bad.read_text().replace("replicas: 6", "replicas: -1"))
    result = run(str(fleet_repo), "--out-dir", str(out))
    assert result.exit_code == 1
    assert "apps/search/search-api.yaml:" in result.stderr
    assert tree(out) == before
    fresh = tmp_path / "fresh"
    assert run(str(fleet_repo), "--out-dir", str(fresh)).exit_code == 1
    assert not fresh.exists()


def test_template_error_is_located(fleet_repo: Path, tmp_path: Path) -> None:
    runtime = fleet_repo / "platform/runtime.yaml"
    text = runtime.read_text().replace("{{ app.project }}", "{{ app.projct }}", 1)
    runtime.write_text(text)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "app.projct" in ln)
    column = text.splitlines()[line - 1].index('"{{') + 1
    result = run(str(fleet_repo), "--out-dir", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert f"platform/runtime.yaml:{line}:{column}: error[template]" in result.stderr
    assert "projct" in result.stderr


def test_stale_files_are_removed(fleet_repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run(str(fleet_repo), "--out-dir", str(out)).exit_code == 0
    (fleet_repo / "apps/search/indexer.yaml").unlink()
    (out / "east-133/search/stray.yaml").write_text("x: 1\n")
    assert run(str(fleet_repo), "--out-dir", str(out)).exit_code == 0
    names = tree(out)
    assert not any("indexer" in n for n in names)
    assert "east-133/search/stray.yaml" not in names
    assert siblings_left(out) == []


def test_refuses_to_replace_foreign_directory(fleet_repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "precious"
    out.mkdir()
    (out / "thesis.tex").write_text("years of work")
    result = run(str(fleet_repo), "--out-dir", str(out))
    assert result.exit_code == 2
    assert "refusing to replace" in result.stderr
    assert (out / "thesis.tex").read_text() == "years of work"
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert run(str(fleet_repo), "--out-dir", str(a_file)).exit_code == 2


def test_a_tree_without_specs_is_a_usage_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    for output in (str(tmp_path / "out"), "-"):
        result = run(str(empty), "--out-dir", output)
        assert result.exit_code == 2, result.output
        assert f"error: no specs under {empty}" in result.stderr
    assert not (tmp_path / "out").exists()
    assert run(str(tmp_path / "mistyped"), "--out-dir", "-").exit_code == 2
