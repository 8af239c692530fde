"""Template budgets from the command line: a JobSet whose ``configTemplates`` would run
forever or build gigabytes is a located error in ``validate`` and ``compile``, found within
the budget and with bounded memory."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INDEXER = "apps/search/search-indexer.yaml"
FIRST_LINE = "      shard_count={{ job.completions }}\n"

#: Each would build a 2 GB string (or loop 10^10 times) without the budget.
BOMBS = {
    "loops": "{% for i in range(100000) %}{% for j in range(100000) %}{{ i * j }}"
             "{% endfor %}{% endfor %}",
    "concat": "{% set ns = namespace(s='x' * 1024) %}{% for i in range(21) %}"
              "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}",
    "join": "{{ range(2048)|join('x' * 1048576) }}",
    "repeat": "{{ ('x' * 1024) * 2097152 }}",
    "center": "{{ app.name|center(2147483648) }}",
}


def tree_with(tmp_path: Path, template: str) -> Path:
    """examples/, with ``template`` as the second line of search-indexer's job.conf."""
    root = tmp_path / "specs"
    shutil.copytree(ROOT / "examples", root)
    spec = root / INDEXER
    text = spec.read_text()
    assert FIRST_LINE in text
    spec.write_text(text.replace(FIRST_LINE, f"{FIRST_LINE}      {template}\n"))
    return root


def pincompile(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pincompile.cli", *args], capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})


@pytest.mark.parametrize("command", ["validate", "compile"])
def test_a_template_that_would_loop_forever_is_a_located_error(tmp_path: Path,
                                                               command: str) -> None:
    root = tree_with(tmp_path, BOMBS["loops"])
    args = [command, str(root)] + (["-o", str(tmp_path / "out")] if command == "compile" else [])
    start = time.monotonic()
    done = pincompile(*args)
    elapsed = time.monotonic() - start
    assert done.returncode == 1, done.stderr
    errors = [line for line in done.stderr.splitlines() if ": error[" in line]
    assert errors, done.stderr
    assert all(line.startswith(f"{INDEXER}:39:7: error[template]: ") for line in errors), errors
    assert "budget" in errors[0] and "$PINCOMPILE_TEMPLATE_" in errors[0]
    assert "hint: make the template do less, or raise the budget" in done.stderr
    assert "Traceback" not in done.stderr
    assert elapsed < 60, elapsed  # unbounded: 10^10 iterations, hours


def test_budget_variables_are_checked_before_anything_runs(tmp_path: Path) -> None:
    done = pincompile("validate", str(ROOT / "examples"),
                      env={"PINCOMPILE_TEMPLATE_SECONDS": "soon"})
    assert done.returncode == 2
    assert "$PINCOMPILE_TEMPLATE_SECONDS: 'soon' is not a number of seconds" in done.stderr


def test_a_raised_budget_lets_a_large_template_through(tmp_path: Path) -> None:
    root = tree_with(tmp_path, "{{ 'x' * 300000 }}")
    assert pincompile("validate", str(root)).returncode == 1
    done = pincompile("validate", str(root), env={"PINCOMPILE_TEMPLATE_OUTPUT": "1Mi"})
    assert done.returncode == 0, done.stderr


PEAK_RSS = """
import json, resource, sys
from pincompile.cli import cli
try:
    cli.main(["validate", sys.argv[1]], standalone_mode=False)
    code = 0
except SystemExit as exit:
    code = exit.code
peak = max(resource.getrusage(who).ru_maxrss
           for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
print(json.dumps({"code": code, "peak_mib": peak / 1024}))
"""


@pytest.mark.parametrize("bomb", ["concat", "join", "repeat", "center"])
def test_a_template_that_builds_gigabytes_stays_within_bounded_memory(tmp_path: Path,
                                                                      bomb: str) -> None:
    root = tree_with(tmp_path, BOMBS[bomb])
    # a clean environment and a cache of its own: the peak is the bomb's, not a cache's
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path),
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", PEAK_RSS, str(root)], capture_output=True,
                          text=True, timeout=120, env=env)
    outcome = json.loads(done.stdout.splitlines()[-1])
    assert outcome["code"] == 1, done.stderr
    assert f"{INDEXER}:39:7: error[template]: " in done.stderr
    assert "output budget of 262144 characters" in done.stderr
    # Linux keeps the peak of the image a process was exec'd from (this pytest, hundreds
    # of MiB late in a full run): compare with a plain validate measured the same way
    plain = subprocess.run([sys.executable, "-c", PEAK_RSS, str(tree_with(
        tmp_path / "plain", "{{ app.name }}"))], capture_output=True, text=True, timeout=120,
        env=env)
    baseline = json.loads(plain.stdout.splitlines()[-1])
    assert outcome["peak_mib"] < baseline["peak_mib"] + 200, (outcome, baseline)
