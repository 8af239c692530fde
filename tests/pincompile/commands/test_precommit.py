"""The ``pincompile-validate`` hook, run by the real ``pre-commit try-repo`` against a spec
repository: a good tree passes, a bad spec fails with its file:line:column.

try-repo installs the hook into a fresh virtualenv on every run (``language: python``
pip-installs this project; try-repo keeps no environment between runs, whatever
PRE_COMMIT_HOME says). So the project's dependencies are kept as wheels in a cache outside the
repository (``~/.cache/pincompile/pre-commit``), built once per dependency list, and each
install runs from them without an index: no downloads after the first run.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tests.support.git import git, git_env
from tests.support.specs import REPO_ROOT, doc, files, write_tree

HOOK_FILES = ("pyproject.toml", "README.md", "LICENSE", "pincompile", "reconciler",
              ".pre-commit-hooks.yaml")
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pincompile" / (
    "pre-commit")
BAD = doc("""
    apiVersion: pincompute.io/v1
    kind: PinPod
    metadata: {name: bad, project: shop}
    spec:
      containers: [{name: main, image: "registry.internal/app:latest"}]
    """)

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("pre_commit") is None or shutil.which("git") is None,
    reason="needs pre-commit (the test extra) and git")


def test_hook_manifest_offers_pincompile_validate() -> None:
    hooks = YAML(typ="safe").load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text())
    hook = next(h for h in hooks if h["id"] == "pincompile-validate")
    assert hook["language"] == "python"
    assert hook["pass_filenames"] is False  # references span files: validate the whole tree
    assert hook["entry"] == "pincompile validate" and hook["args"] == ["."]
    assert hook["files"] == r"\.ya?ml$"


def _commit_all(repo: Path) -> None:
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-verify", "-m", "snapshot")


def _hooks_repo(dest: Path) -> Path:
    """A git repository holding the current working tree of this project (uncommitted work
    included), as pre-commit would clone it."""
    dest.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in HOOK_FILES:
        src = REPO_ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=ignore)
        elif src.exists():
            shutil.copy2(src, dest / name)
    _commit_all(dest)
    return dest


def _wheelhouse() -> Path:
    """Wheels of the project's dependencies and build requirements, built once per list."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    requirements = sorted([*project["project"]["dependencies"],
                           *project["build-system"]["requires"]])
    key = hashlib.sha256("\n".join([sys.version, *requirements]).encode()).hexdigest()[:16]
    wheels = CACHE / f"wheels-{key}"
    if not (wheels / ".complete").exists():
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--wheel-dir",
                        str(wheels), *requirements], check=True, timeout=900)
        (wheels / ".complete").touch()
    return wheels


def _try_repo(hooks: Path, specs: Path, wheels: Path) -> subprocess.Popen[str]:
    env = {**git_env(), "PRE_COMMIT_HOME": str(CACHE / "home"),
           "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels), "PIP_QUIET": "1",
           "PIP_NO_COMPILE": "1",
           "PRE_COMMIT_COLOR": "never"}
    env.pop("PINCOMPILE_DEBUG", None)
    return subprocess.Popen(
        [sys.executable, "-m", "pre_commit", "try-repo", str(hooks), "pincompile-validate",
         "--all-files"],
        cwd=specs, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str]:
    try:
        output, _ = proc.communicate(timeout=900)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    return proc.returncode, output


def _hook_line(output: str) -> str:
    return next((line for line in output.splitlines()
                 if line.startswith("pincompile validate")), output)


def test_pre_commit_try_repo_passes_good_specs_and_fails_a_bad_one(tmp_path: Path) -> None:
    wheels = _wheelhouse()
    hooks = _hooks_repo(tmp_path / "hooks")
    good_repo = write_tree(tmp_path / "good", files())
    bad_repo = write_tree(tmp_path / "bad", files({"apps/shop/bad.yaml": BAD}))
    for repo in (good_repo, bad_repo):
        _commit_all(repo)

    # each run installs the hook into a fresh virtualenv: run both at once
    runs = [_try_repo(hooks, repo, wheels) for repo in (good_repo, bad_repo)]
    (good_code, good), (bad_code, bad) = [_finish(proc) for proc in runs]

    assert good_code == 0, good
    assert _hook_line(good).endswith("Passed"), good

    assert bad_code == 1, bad
    assert _hook_line(bad).endswith("Failed"), bad
    assert ("apps/shop/bad.yaml:5:36: error[invalid-value]: spec.containers[0].image: image "
            "'registry.internal/app:latest' uses ':latest'") in bad
    assert "Traceback" not in good + bad
