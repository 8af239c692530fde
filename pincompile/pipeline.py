"""The stages of a compile: load → parse → check → place → expand, over documents in memory.

Every stage adds diagnostics; a result with any holds no objects to use. Pure: loaded
documents in, a :class:`Result` out (with ``jobs`` > 1 the checks run in a forked process).
:class:`Result` is what the reconciler takes from the compiler; the in-memory
:class:`~pincompile.compiler.Compiler` and the output folder
(:mod:`pincompile.emit.folder`) build on these stages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pincompile.catalog import Catalog, note_invalid
from pincompile.diagnostics import Diagnostic, add_new
from pincompile.manifest import ANNOTATION_REVISION, Manifest
from pincompile.parse import parse
from pincompile.repoconfig import repo_config
from pincompile.source import readahead
from pincompile.source.loader import LoadResult


@dataclass
class Result:
    """What a compile produced: specs, diagnostics, the placement plan and the objects."""

    catalog: Catalog
    sources: dict[str, str]
    diagnostics: list[Diagnostic] = field(default_factory=list)
    plan: Any = None
    manifests: list[Manifest] = field(default_factory=list)
    warnings: list[Diagnostic] = field(default_factory=list)
    """Located findings that do not make the specs invalid (files skipped, ...)."""

    @property
    def ok(self) -> bool:
        return not self.diagnostics

    @property
    def revision(self) -> str:
        """The git revision the manifests were compiled from ("unknown" without one)."""
        for manifest in self.manifests:
            rev = (manifest.obj["metadata"].get("annotations") or {}).get(ANNOTATION_REVISION)
            if rev:
                return str(rev)
        return "unknown"


def run(loaded: LoadResult, *, revision: str = "unknown", expand: bool = True) -> Result:
    """Run every stage over loaded documents and collect all diagnostics.

    Later stages guard against what earlier ones already reported (a duplicate container,
    say); where two stages flag the same place, the earlier stage's message is kept.
    """
    catalog, diagnostics = parse(loaded)
    return run_parsed(loaded, catalog, diagnostics, revision=revision, expand=expand)


def run_parsed(loaded: LoadResult, catalog: Catalog, diagnostics: list[Diagnostic], *,
                revision: str, expand: bool, jobs: int = 1) -> Result:
    """check → place → expand over a parsed catalog (with ``jobs`` > 1 and a large catalog,
    the checks run in a forked process while placement runs here)."""
    from pincompile.checks import check
    from pincompile.emit.output import too_large_all
    from pincompile.expand import expand_all
    from pincompile.placement import plan as place

    result = Result(catalog=catalog, sources=loaded.sources, diagnostics=diagnostics,
                    warnings=sorted(loaded.warnings))
    note_invalid(catalog, loaded.documents)
    config, problems = repo_config(loaded.sources)
    add_new(result.diagnostics, problems)
    if jobs > 1 and len(catalog.entries) >= readahead.LOAD_AHEAD_MIN:
        from pincompile.forked import Forked

        checking = Forked(check, catalog, config)
        plan, problems = place(catalog)
        add_new(result.diagnostics, checking.result())
    else:
        add_new(result.diagnostics, check(catalog, config))
        plan, problems = place(catalog)
    result.plan = plan
    add_new(result.diagnostics, problems)
    if expand:
        manifests, problems = expand_all(catalog, plan, revision=revision)
        result.manifests = manifests
        add_new(result.diagnostics, problems)
        add_new(result.diagnostics, too_large_all(manifests))
    result.diagnostics = sorted(set(result.diagnostics))
    return result
