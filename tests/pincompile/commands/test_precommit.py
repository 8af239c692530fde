"""The ``pincompile-validate`` hook, run by the real ``pre-commit`` from a spec repository's
configuration (``repo:`` this project, ``rev:`` a commit): a good tree passes, a bad spec fails
with its file:line:column.

pre-commit installs a ``language: python`` hook by pip-installing this project into a
virtualenv of its own (most of it the kubernetes client), and keeps that environment
in its store by repository and rev. So the hook's repository is this project's working tree
(uncommitted work included) committed with a fixed identity and date: its rev is a function of
its files, and a store kept outside the repository (``~/.cache/pincompile/pre-commit``) installs
each version of the project once, from wheels of its dependencies built once per dependency
list (no index, no downloads after the first run). The good and the bad tree share that one
install; the newest few versions are kept, older ones removed with ``pre-commit gc``.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
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
#: the hook's repository is committed at this date: its rev depends on its files alone
FIXED_DATE = "2024-01-01T00:00:00+00:00"
#: versions of the hook whose environments stay in the store
KEEP = 3
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


def _hooks_repo() -> tuple[Path, str]:
    """A git repository holding the current working tree of this project (uncommitted work
    included), as pre-commit would clone it, and its rev: the same files give the same
    repository, so pre-commit's store installs them once."""
    versions = CACHE / "hooks"
    versions.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=versions, prefix=".new-"))
    try:
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
        for name in HOOK_FILES:
            src = REPO_ROOT / name
            if src.is_dir():
                shutil.copytree(src, work / name, ignore=ignore)
            elif src.exists():
                shutil.copy2(src, work / name)
        git(work, "init", "-q")
        git(work, "add", "-A")
        subprocess.run(["git", "commit", "-q", "--no-verify", "-m", "the working tree"],
                       cwd=work, check=True, capture_output=True, timeout=120,
                       env={**git_env(), "GIT_AUTHOR_DATE": FIXED_DATE,
                            "GIT_COMMITTER_DATE": FIXED_DATE})
        rev = git(work, "rev-parse", "HEAD")
        hooks = versions / rev
        if not hooks.exists():
            with contextlib.suppress(OSError):  # another run made the same one meanwhile
                work.rename(hooks)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    os.utime(hooks)
    return hooks, rev


def _config(hooks: Path, rev: str) -> Path:
    """A spec repository's configuration of the hook. It lives beside the store, not in the
    test's directory: pre-commit gc keeps the environments of the configurations that exist."""
    config = CACHE / "configs" / f"{rev}.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    text = ("repos:\n"
            f"  - repo: {hooks}\n"
            f"    rev: {rev}\n"
            "    hooks:\n"
            "      - id: pincompile-validate\n")
    if not config.exists() or config.read_text() != text:
        partial = config.with_suffix(f".{os.getpid()}.partial")
        partial.write_text(text)
        partial.replace(config)
    return config


def _prune(keep: int = KEEP) -> None:
    """Remove all but the newest ``keep`` versions of the hook, and their environments."""
    configs = sorted((CACHE / "configs").glob("*.yaml"), key=lambda p: p.stat().st_mtime,
                     reverse=True)
    for config in configs[keep:]:
        config.unlink(missing_ok=True)
        shutil.rmtree(CACHE / "hooks" / config.stem, ignore_errors=True)
    if len(configs) > keep:
        subprocess.run([sys.executable, "-m", "pre_commit", "gc"], check=True,
                       capture_output=True, timeout=300, env=_env())


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


def _env(wheels: Path | None = None) -> dict[str, str]:
    env = {**git_env(), "PRE_COMMIT_HOME": str(CACHE / "home"), "PRE_COMMIT_COLOR": "never"}
    if wheels is not None:
        env |= {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels), "PIP_QUIET": "1",
                "PIP_NO_COMPILE": "1"}
    env.pop("PINCOMPILE_DEBUG", None)
    return env


def _run_hook(config: Path, specs: Path, wheels: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pre_commit", "run", "--config", str(config), "--all-files"],
        cwd=specs, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=_env(wheels))


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


def test_pre_commit_runs_the_hook_passing_good_specs_and_failing_a_bad_one(
        tmp_path: Path) -> None:
    wheels = _wheelhouse()
    hooks, rev = _hooks_repo()
    config = _config(hooks, rev)
    good_repo = write_tree(tmp_path / "good", files())
    bad_repo = write_tree(tmp_path / "bad", files({"apps/shop/bad.yaml": BAD}))
    for repo in (good_repo, bad_repo):
        _commit_all(repo)

    # the first run installs this version of the hook (once: the store is locked meanwhile)
    good_code, good = _finish(_run_hook(config, good_repo, wheels))
    bad_code, bad = _finish(_run_hook(config, bad_repo, wheels))

    assert good_code == 0, good
    assert _hook_line(good).endswith("Passed"), good

    assert bad_code == 1, bad
    assert _hook_line(bad).endswith("Failed"), bad
    assert ("apps/shop/bad.yaml:5:36: error[invalid-value]: spec.containers[0].image: image "
            "'registry.internal/app:latest' uses ':latest'") in bad
    assert "Traceback" not in good + bad
    _prune()
