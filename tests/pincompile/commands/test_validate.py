"""``pincompile validate``: exit codes, human and JSON output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from pincompile.cli import cli
from tests.support.specs import FIXTURE, doc, files, write_tree

LATEST = doc("""
    apiVersion: pincompute.io/v1
    kind: PinPod
    metadata: {name: bad, project: shop}
    spec:
      containers: [{name: main, image: "registry.internal/app:latest"}]
      sidecars: [loging]
    """)
LATEST_MESSAGE = ("spec.containers[0].image: image 'registry.internal/app:latest' uses ':latest'; "
                  "pin a version tag or a digest so rollouts are reproducible")


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout, result.stderr


def test_valid_tree_exits_0() -> None:
    code, out, err = invoke("validate", str(FIXTURE))
    assert (code, err) == (0, "")
    assert out.startswith("ok: 17 specs valid, ")


def test_quiet_prints_nothing_when_valid() -> None:
    assert invoke("validate", "-q", str(FIXTURE)) == (0, "", "")


def test_invalid_tree_exits_1_and_shows_the_offending_line(tmp_path: Path) -> None:
    root = write_tree(tmp_path, files({"apps/shop/bad.yaml": LATEST}))
    code, out, err = invoke("validate", str(root))
    assert (code, out) == (1, "")
    source = '  containers: [{name: main, image: "registry.internal/app:latest"}]'
    assert err.splitlines() == [
        f"apps/shop/bad.yaml:5:36: error[invalid-value]: {LATEST_MESSAGE}",
        f"    5 | {source}",
        " " * 8 + " " * 35 + "^",
        "",
        "1 error in 1 file",
    ]


def test_hints_are_shown(tmp_path: Path) -> None:
    fixed = LATEST.replace(":latest", ":1.0")
    root = write_tree(tmp_path, files({"apps/shop/bad.yaml": fixed}))
    code, _, err = invoke("validate", str(root))
    assert code == 1
    assert err.splitlines()[:4] == [
        "apps/shop/bad.yaml:6:14: error[unknown-sidecar]: sidecar 'loging' does not exist",
        "    6 |   sidecars: [loging]",
        " " * 8 + " " * 13 + "^",
        "  hint: did you mean 'logging'?",
    ]


def test_json_output(tmp_path: Path) -> None:
    root = write_tree(tmp_path, files({"apps/shop/bad.yaml": LATEST}))
    code, out, _ = invoke("validate", "-o", "json", str(root))
    assert code == 1
    assert json.loads(out) == [{"file": "apps/shop/bad.yaml", "line": 5, "column": 36,
                                "code": "invalid-value", "message": LATEST_MESSAGE}]


def test_json_output_when_valid() -> None:
    code, out, _ = invoke("validate", "-o", "json", str(FIXTURE))
    assert (code, json.loads(out)) == (0, [])


def test_json_output_includes_hints(tmp_path: Path) -> None:
    root = write_tree(tmp_path, files({"apps/shop/bad.yaml": LATEST.replace(":latest", ":1.0")}))
    _, out, _ = invoke("validate", "-o", "json", str(root))
    assert json.loads(out) == [{
        "file": "apps/shop/bad.yaml", "line": 6, "column": 14, "code": "unknown-sidecar",
        "message": "sidecar 'loging' does not exist", "hint": "did you mean 'logging'?"}]


def test_default_path_is_the_current_directory(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    write_tree(tmp_path, files({"apps/shop/bad.yaml": LATEST}))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["validate", "-o", "json"])
    assert result.exit_code == 1
    assert [d["file"] for d in json.loads(result.stdout)] == ["apps/shop/bad.yaml"]


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert invoke("validate", str(tmp_path / "missing"))[0] == 2
    assert invoke("validate", "-o", "xml", str(FIXTURE))[0] == 2
    assert invoke("validate", "--no-such-flag")[0] == 2


def test_the_installed_command_never_shows_a_traceback(tmp_path: Path) -> None:
    root = write_tree(tmp_path, files({
        "apps/shop/bad.yaml": LATEST,
        "apps/shop/binary.yaml": b"\x00\x01",
        "apps/shop/broken.yaml": "apiVersion: pincompute.io/v1\nkind: [\n",
        "apps/shop/latin1.yaml": b"apiVersion: pincompute.io/v1\nkind: caf\xe9\n",
    }))
    env = {k: v for k, v in os.environ.items() if k != "PINCOMPILE_DEBUG"}
    proc = subprocess.run([sys.executable, "-m", "pincompile.cli", "validate", str(root)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert [line.split(": error[")[0] for line in proc.stderr.splitlines()
            if ": error[" in line] == [
        "apps/shop/bad.yaml:5:36", "apps/shop/binary.yaml:1:1", "apps/shop/broken.yaml:3:1",
        "apps/shop/latin1.yaml:2:10"]


@pytest.mark.parametrize("content", [{}, {"README.md": "# docs\n", "ci/config.yaml": "a: 1\n"}])
def test_a_tree_without_specs_is_a_usage_error(tmp_path: Path, content: dict[str, str]) -> None:
    root = write_tree(tmp_path / "repo", content)
    root.mkdir(exist_ok=True)
    code, out, err = invoke("validate", str(root))
    assert (code, out) == (2, "")
    assert err == (f"error: no specs under {root}: no .yaml or .yml file there holds a "
                   "pincompute.io document\n")
    assert invoke("validate", "-o", "json", str(root))[0] == 2
    assert invoke("validate", str(tmp_path / "mistyped"))[0] == 2


def test_a_tree_whose_only_spec_is_invalid_is_invalid(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", {"apps/shop/bad.yaml": LATEST})
    assert invoke("validate", str(root))[0] == 1
