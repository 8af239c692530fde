"""``pincompile version`` and ``pincompile --version``: the package version, the git commit
of the checkout it runs from (when it is one), and the Python; ``-o json`` for tools."""

from __future__ import annotations

import json
import platform
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from click.testing import CliRunner

from pincompile.cli import cli

REPO = Path(__file__).resolve().parents[3]
PINCOMPILE = str(Path(sys.executable).parent / "pincompile")


def head() -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True,
                          text=True, check=True).stdout.strip()


def test_version_names_the_package_the_commit_and_python() -> None:
    done = subprocess.run([PINCOMPILE, "version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == ""
    lines = done.stdout.splitlines()
    assert lines[0] == f"pincompile {metadata.version('pincompile')}"
    assert re.fullmatch(rf"commit: {head()}(-dirty)?", lines[1])
    assert lines[2] == f"python: {platform.python_version()} ({sys.implementation.name})"


def test_version_flag_prints_the_same_as_the_command() -> None:
    flag = subprocess.run([PINCOMPILE, "--version"], capture_output=True, text=True,
                          timeout=60)
    command = subprocess.run([PINCOMPILE, "version"], capture_output=True, text=True,
                             timeout=60)
    assert flag.returncode == 0 and flag.stdout == command.stdout


def test_version_as_json() -> None:
    done = CliRunner().invoke(cli, ["version", "-o", "json"])
    assert done.exit_code == 0
    info = json.loads(done.stdout)
    assert info["version"] == metadata.version("pincompile")
    assert info["commit"].split("-")[0] == head()
    assert info["python"].startswith(platform.python_version())


def test_an_unknown_format_is_a_usage_error() -> None:
    assert CliRunner().invoke(cli, ["version", "-o", "yaml"]).exit_code == 2
