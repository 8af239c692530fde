"""Shell completion is click's: ``_PINCOMPILE_COMPLETE=bash_source pincompile`` prints the
script (as README.md shows); it completes commands, options, ``-o`` formats and the KIND
of KIND/PROJECT/NAME."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PINCOMPILE = str(Path(sys.executable).parent / "pincompile")


def complete(words: str, shell: str = "bash") -> list[str]:
    """What the completion script asks the command for, as the shell would."""
    parts = words.split(" ")
    env = {**os.environ, "_PINCOMPILE_COMPLETE": f"{shell}_complete",
           "COMP_WORDS": words, "COMP_CWORD": str(len(parts) - 1)}
    done = subprocess.run([PINCOMPILE], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [line.split(",", 1)[1] for line in done.stdout.splitlines() if "," in line]


@pytest.mark.parametrize(("shell", "marker"), [
    ("bash", "complete -o nosort -F _pincompile_completion pincompile"),
    ("zsh", "compdef _pincompile_completion pincompile"),
    ("fish", "complete --no-files --command pincompile"),
])
def test_the_completion_script_is_generated(shell: str, marker: str) -> None:
    env = {**os.environ, "_PINCOMPILE_COMPLETE": f"{shell}_source"}
    done = subprocess.run([PINCOMPILE], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == ""
    assert marker in done.stdout


def test_the_bash_script_loads_in_bash(tmp_path: Path) -> None:
    env = {**os.environ, "_PINCOMPILE_COMPLETE": "bash_source"}
    script = subprocess.run([PINCOMPILE], env=env, capture_output=True, text=True,
                            timeout=60).stdout
    (tmp_path / "completion.sh").write_text(script)
    done = subprocess.run(["bash", "-c", f"source {tmp_path / 'completion.sh'} && complete -p "
                           "pincompile"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "_pincompile_completion" in done.stdout


def test_commands_complete() -> None:
    assert complete("pincompile sta") == ["status"]
    assert {"compile", "validate", "version", "plan", "apply"} <= set(complete("pincompile "))


def test_output_formats_complete() -> None:
    assert complete("pincompile status -o ") == ["table", "wide", "json", "yaml", "name"]
    assert complete("pincompile diff -o m") == ["markdown"]


def test_kinds_of_an_app_complete() -> None:
    assert complete("pincompile status PinA") == ["PinApp/"]
    assert "PinterestService/" in complete("pincompile plan examples Pin")
    assert complete("pincompile status PinApp/sea") == []
