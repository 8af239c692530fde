"""Every shell block in README.md and docs/ marked ``<!-- runnable -->`` runs as shown.

In such a block, a line starting with ``$ `` is a command (run from the repository root,
``pincompile`` being this checkout's); the lines after it, up to the next command, must each
appear in what it prints, in order (``...`` matches any text). Every command must exit 0.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MARKER = "<!-- runnable -->"
_BLOCK = re.compile(re.escape(MARKER) + r"\s*\n```(?:sh|bash|console)\n(.*?)```", re.S)


@dataclass
class Command:
    source: str
    line: str
    expected: list[str] = field(default_factory=list)


def runnable_commands(path: Path) -> list[Command]:
    text = path.read_text()
    out: list[Command] = []
    for block in _BLOCK.finditer(text):
        lineno = text.count("\n", 0, block.start(1)) + 1
        for i, line in enumerate(block.group(1).splitlines()):
            if line.startswith("$ "):
                out.append(Command(f"{path.relative_to(REPO)}:{lineno + i}", line[2:]))
            elif line.strip() and out:
                out[-1].expected.append(line)
    return out


def _documents() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


COMMANDS = [c for doc in _documents() for c in runnable_commands(doc)]


def test_the_docs_have_runnable_commands() -> None:
    assert len(COMMANDS) >= 2


def _pattern(expected: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in expected.split("...")))


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.source)
def test_runnable_command(command: Command) -> None:
    argv = shlex.split(command.line)
    if argv[0] == "pincompile":
        argv[0] = str(Path(sys.executable).parent / "pincompile")
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{command.source}: {command.line}\n{done.stdout}{done.stderr}"
    printed = done.stdout.splitlines()
    at = 0
    for expected in command.expected:
        pattern = _pattern(expected.rstrip())
        while at < len(printed) and not pattern.fullmatch(printed[at].rstrip()):
            at += 1
        assert at < len(printed), (
            f"{command.source}: `{command.line}` did not print (in order) {expected!r}; it "
            f"printed:\n{done.stdout}")
        at += 1
