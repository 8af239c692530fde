"""The one way through: load → parse → check → place → expand.

Every stage adds diagnostics; nothing is written and nothing is applied when any stage
reported an error. The pipeline is pure: files (or git blobs) in, objects out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pincompile.catalog import Catalog
from pincompile.diagnostics import Diagnostic
from pincompile.loader import LoadResult, load_tree
from pincompile.manifest import Manifest
from pincompile.parse import parse


@dataclass
class Result:
    """What a compile produced: specs, diagnostics, the placement plan and the objects."""

    catalog: Catalog
    sources: dict[str, str]
    diagnostics: list[Diagnostic] = field(default_factory=list)
    plan: Any = None
    manifests: list[Manifest] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.diagnostics


def run(loaded: LoadResult, *, revision: str = "unknown", expand: bool = True) -> Result:
    """Run every stage over loaded documents and collect all diagnostics.

    Later stages guard against what earlier ones already reported (a duplicate container,
    say); where two stages flag the same place, the earlier stage's message is kept.
    """
    from pincompile.checks import check
    from pincompile.expand import expand_all
    from pincompile.placement import plan as place

    catalog, diagnostics = parse(loaded)
    result = Result(catalog=catalog, sources=loaded.sources, diagnostics=diagnostics)
    _add_new(result.diagnostics, check(catalog))
    plan, problems = place(catalog)
    result.plan = plan
    _add_new(result.diagnostics, problems)
    if expand:
        manifests, problems = expand_all(catalog, plan, revision=revision)
        result.manifests = manifests
        _add_new(result.diagnostics, problems)
    result.diagnostics = sorted(set(result.diagnostics))
    return result


def _add_new(found: list[Diagnostic], more: list[Diagnostic]) -> None:
    """Add a stage's diagnostics, except at places an earlier stage already reported."""
    taken = {(d.file, d.line, d.column) for d in found}
    found.extend(d for d in more if (d.file, d.line, d.column) not in taken)


def compile_path(root: Path, *, revision: str | None = None, expand: bool = True) -> Result:
    """Load and compile the spec tree at ``root``."""
    return run(load_tree(root), revision=revision or git_revision(root), expand=expand)


def git_revision(root: Path) -> str:
    """The git commit of ``root`` (``<sha>`` or ``<sha>-dirty``), or ``unknown``."""
    import subprocess

    try:
        cwd = root if root.is_dir() else root.parent
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True,
                             text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "."], cwd=cwd,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return f"{sha}-dirty" if dirty else sha
    except (OSError, subprocess.SubprocessError):
        return "unknown"
