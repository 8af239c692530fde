"""The one way tests run git: a fixed identity, and no system or user git configuration
(a developer's ``commit.gpgsign`` or hooks never reach a test's repository)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

AUTHOR = "Ada Lovelace"
EMAIL = "ada@example.com"


def git_env() -> dict[str, str]:
    """The environment tests run git in (``HOME`` kept: pre-commit caches there)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return {**env, "GIT_AUTHOR_NAME": AUTHOR, "GIT_AUTHOR_EMAIL": EMAIL,
            "GIT_COMMITTER_NAME": AUTHOR, "GIT_COMMITTER_EMAIL": EMAIL,
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


def git(cwd: Path | str, *args: str, timeout: float = 120) -> str:
    """Run ``git args`` in ``cwd``; its output, stripped (a failure raises)."""
    return subprocess.run(["git", *args], cwd=cwd, env=git_env(), check=True,
                          capture_output=True, text=True, timeout=timeout).stdout.strip()
