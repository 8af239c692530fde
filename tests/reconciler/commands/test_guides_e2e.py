"""The tutorial (docs/tutorial.md) and then the troubleshooting guide
(docs/troubleshooting.md) run as written, on the session fleet, every command of them.

In the guides, a ```yaml block after ``<!-- e2e: file PATH -->`` is written to PATH; in a
```sh block after ``<!-- e2e -->``, a line starting with ``$ `` is a command (run by bash
in the guide's current folder; ``$ cd DIR`` changes it), and the lines after it up to the
next command must each appear in what it prints, in order (``...`` matches any text). A
command exits 0, or the code its ``# exit N`` comment says.

The fleet is as ``make demo`` leaves it, but for the examples' apps: its platform applied.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from reconciler.fleet import fleet as fleet_mod
from tests.support.fleet import spec_repo
from tests.support.git import git_env

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[3]
GUIDES = [REPO / "docs" / "tutorial.md", REPO / "docs" / "troubleshooting.md"]
_STEP = re.compile(r"<!-- e2e(?:: file (?P<file>\S+))? -->\s*\n```(?P<lang>\w+)\n(?P<body>.*?)```",
                   re.S)
_EXIT = re.compile(r"\s+# exit (\d+)$")


@dataclass
class Step:
    source: str
    command: str = ""
    expected: list[str] = field(default_factory=list)
    exit_code: int = 0
    file: str = ""
    content: str = ""


def steps(path: Path) -> list[Step]:
    """Every file to write and command to run in ``path``, in order."""
    text = path.read_text()
    out: list[Step] = []
    for block in _STEP.finditer(text):
        line = text.count("\n", 0, block.start("body")) + 1
        where = f"{path.name}:{line}"
        if block["file"]:
            out.append(Step(where, file=block["file"], content=block["body"]))
            continue
        for i, row in enumerate(block["body"].splitlines()):
            if row.startswith("$ "):
                code = _EXIT.search(row)
                out.append(Step(f"{path.name}:{line + i}", _EXIT.sub("", row[2:]),
                                exit_code=int(code[1]) if code else 0))
            elif row.strip() and out and out[-1].command:
                out[-1].expected.append(row)
    return out


def test_the_guides_have_steps() -> None:
    found = [s for guide in GUIDES for s in steps(guide)]
    assert sum(1 for s in found if s.command) >= 20 and any(s.file for s in found)


def _pattern(expected: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in expected.split("...")))


def _shown(step: Step, output: str) -> None:
    printed = output.splitlines()
    at = 0
    for expected in step.expected:
        pattern = _pattern(expected.rstrip())
        while at < len(printed) and not pattern.fullmatch(printed[at].rstrip()):
            at += 1
        assert at < len(printed), (f"{step.source}: `{step.command}` did not print (in "
                                   f"order) {expected!r}; it printed:\n{output}")
        at += 1


@pytest.fixture(scope="module")
def checkout(fleet: fleet_mod.FleetState, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the examples, as a pincompile checkout does, the fleet's
    platform applied (nothing pruned: the fleet is shared)."""
    root = tmp_path_factory.mktemp("guides")
    shutil.copytree(REPO / "examples", root / "examples")
    platform = root / "platform-only"
    platform.mkdir()
    shutil.copytree(REPO / "examples" / "platform", platform / "platform")
    shutil.copy(REPO / "examples" / "pincompile.yaml", platform)
    spec_repo(platform, root / "platform-repo")
    done = subprocess.run([str(Path(sys.executable).parent / "pincompile"), "apply",
                           str(root / "platform-repo"), "--no-prune", "-q"],
                          env={**os.environ, "KUBECONFIG": str(fleet.kubeconfig)},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return root


def test_the_tutorial_then_the_troubleshooting_guide_run_as_written(
        checkout: Path, fleet: fleet_mod.FleetState) -> None:
    env = {**git_env(), "KUBECONFIG": str(fleet.kubeconfig), "COLUMNS": "200",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("PINCOMPILE_SERVER", None)
    cwd = checkout
    for step in [s for guide in GUIDES for s in steps(guide)]:
        if step.file:
            (cwd / step.file).parent.mkdir(parents=True, exist_ok=True)
            (cwd / step.file).write_text(step.content)
            continue
        if step.command.startswith("cd "):
            cwd = (cwd / step.command[3:].strip()).resolve()
            continue
        done = subprocess.run(["bash", "-c", step.command], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=600)
        print(f"{step.source}: $ {step.command} -> {done.returncode}")
        assert done.returncode == step.exit_code, (
            f"{step.source}: `{step.command}` exited {done.returncode}, not "
            f"{step.exit_code}:\n{done.stdout}{done.stderr}")
        _shown(step, done.stdout + done.stderr)
