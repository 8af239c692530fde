"""Every generated object fits the API server's request size limit, or is a located error."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from pincompile.cli import cli
from pincompile.compiler import compile_path
from pincompile.emit.output import MAX_OBJECT_BYTES

SPEC = "apps/search/search-api.yaml"
ARGS = 'args: ["--config=/etc/pincompute/config/app.yaml"]'


TOO_LARGE = re.compile(
    rf"{SPEC}:2:1: error\[object-too-large\]: generates Deployment 'search/search-api' for "
    rf"cluster (\S+) of (\d+) bytes; the API server refuses objects over {MAX_OBJECT_BYTES} "
    r"bytes \(1\.5 MiB\)")


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def with_arg(root: Path, size: int) -> None:
    """Give search-api's main container one more argument of ``size`` characters."""
    spec = root / SPEC
    text = spec.read_text()
    assert ARGS in text
    spec.write_text(text.replace(ARGS, ARGS[:-1] + f', "{"x" * size}"]'))




def test_an_object_over_the_limit_is_a_located_error(fleet_repo: Path, tmp_path: Path) -> None:
    with_arg(fleet_repo, MAX_OBJECT_BYTES)
    out = tmp_path / "out"
    for command in (["compile", str(fleet_repo), "--out-dir", str(out)],
                    ["compile", str(fleet_repo), "--out-dir", "-"],
                    ["validate", str(fleet_repo)]):
        result = invoke(*command)
        assert result.exit_code == 1, (command, result.output)
        found = [TOO_LARGE.fullmatch(line) for line in result.stderr.splitlines()
                 if "error[" in line]
        clusters = sorted(m.group(1) for m in found if m)
        assert clusters == ["east-133", "gpu-133", "west-128"], command
        assert all(int(m.group(2)) > MAX_OBJECT_BYTES for m in found if m)
    as_json = invoke("compile", str(fleet_repo), "--out-dir", str(out), "-o", "json")
    assert as_json.exit_code == 1  # -o json: the errors as JSON on stdout
    assert [(d["file"], d["line"], d["code"]) for d in json.loads(as_json.stdout)] == \
        [(SPEC, 2, "object-too-large")] * 3
    assert not out.exists()
    located = {(d.location(), d.code) for d in compile_path(fleet_repo).diagnostics}
    assert located == {(f"{SPEC}:2:1", "object-too-large")}


def test_an_object_just_under_the_limit_compiles(fleet_repo: Path, tmp_path: Path) -> None:
    with_arg(fleet_repo, MAX_OBJECT_BYTES - 20_000)
    result = invoke("compile", str(fleet_repo), "--out-dir", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    written = tmp_path / "out/east-133/search/deployment-search-api.yaml"
    assert written.stat().st_size > MAX_OBJECT_BYTES - 20_000


@pytest.mark.parametrize("command", ["compile", "validate"])
def test_the_cached_fast_path_checks_the_size_too(fleet_repo: Path, tmp_path: Path,
                                                  command: str) -> None:
    out = ["--out-dir", str(tmp_path / "out")] if command == "compile" else []
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert invoke(command, str(fleet_repo), *out, *cache).exit_code == 0
    with_arg(fleet_repo, MAX_OBJECT_BYTES)
    result = invoke(command, str(fleet_repo), *out, *cache)
    assert result.exit_code == 1, result.output
    assert f"{SPEC}:2:1: error[object-too-large]" in result.stderr
