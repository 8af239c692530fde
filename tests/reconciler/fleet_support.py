"""What the reconciler's end-to-end modules share besides ``tests.conftest``'s fleet and
client helpers: a git repository of specs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com",
                           *args], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()


def spec_repo(source: Path, path: Path) -> Path:
    """A git repository at ``path`` holding a copy of ``source``, committed."""
    shutil.copytree(source, path)
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "initial")
    return path
