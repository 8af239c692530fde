"""Golden files: the full expansion of every kind, reviewed by hand once.

Each case is a small spec repo (``<case>/input/``, run against the shared fleet in
``_platform/``) with a hand-written placement (``<case>/plan.yaml``); ``<case>/expected/``
holds every object it expands to, as ``pincompile compile`` writes them. A case's plan with
``scope: all`` also keeps the platform's own objects (PriorityClasses, Namespaces,
ResourceQuotas, sidecar DaemonSets); other cases keep only what their own specs generate.

Regenerate after an intended change, then review the diff:

    UPDATE_GOLDENS=1 pytest tests/pincompile/expand/test_golden.py
"""

from __future__ import annotations

import difflib
import os
import shutil
from pathlib import Path

import pytest
import yaml

from pincompile.diagnostics import render_human
from pincompile.emit.output import render_files
from tests.support.expand import GOLDEN, PLATFORM, expand, load

CASES = sorted(p.name for p in GOLDEN.iterdir() if (p / "input").is_dir())
UPDATE = bool(os.environ.get("UPDATE_GOLDENS"))


def compile_case(case: Path) -> dict[str, str]:
    spec = yaml.safe_load((case / "plan.yaml").read_text())
    scope = spec.pop("scope", "own")
    catalog, loaded = load(PLATFORM, case / "input")
    manifests, problems = expand(catalog, spec, revision="golden")
    assert not problems, render_human(problems, loaded.sources)
    if scope != "all":
        manifests = [m for m in manifests
                     if m.source is not None and m.source.file.startswith("apps/")]
    return render_files(manifests, "yaml")


def read_tree(root: Path) -> dict[str, str]:
    if not root.is_dir():
        return {}
    return {p.relative_to(root).as_posix(): p.read_text()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("name", CASES)
def test_golden(name: str) -> None:
    case = GOLDEN / name
    actual = compile_case(case)
    expected_dir = case / "expected"
    if UPDATE:
        shutil.rmtree(expected_dir, ignore_errors=True)
        for rel, text in actual.items():
            path = expected_dir / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        return
    expected = read_tree(expected_dir)
    assert expected, (f"no goldens for {name}; run UPDATE_GOLDENS=1 pytest "
                      "tests/pincompile/expand/test_golden.py")
    problems = []
    for rel in sorted(set(actual) | set(expected)):
        if rel not in expected:
            problems.append(f"unexpected file {rel}")
        elif rel not in actual:
            problems.append(f"missing file {rel}")
        elif actual[rel] != expected[rel]:
            diff = difflib.unified_diff(expected[rel].splitlines(), actual[rel].splitlines(),
                                        f"expected/{rel}", f"actual/{rel}", lineterm="")
            problems.append("\n".join(diff))
    assert not problems, (
        "\n".join(problems) + "\n\nif the change is intended: UPDATE_GOLDENS=1 pytest "
        "tests/pincompile/expand/test_golden.py, then review the diff")


def test_every_kind_has_a_golden() -> None:
    from pincompile.models import KINDS

    covered: set[str] = set()
    for name in CASES:
        for path in (GOLDEN / name / "input").rglob("*.yaml"):
            covered.update(d["kind"] for d in yaml.safe_load_all(path.read_text()) if d)
    covered.update(d["kind"] for p in PLATFORM.rglob("*.yaml")
                   for d in yaml.safe_load_all(p.read_text()) if d)
    assert covered >= set(KINDS)
