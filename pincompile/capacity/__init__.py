"""Capacity at PR time: losing each zone (or cluster) in turn with the reconciler's
failover rules, what the survivors cannot hold, and the headroom per cluster and tier
(``pincompile capacity``; ``validate`` and ``diff`` when ``pincompile.yaml`` has
``survive``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pincompile.capacity.model import PRIORITY, Loss, Over, Report, Room, Short, counted_for
from pincompile.diagnostics import Diagnostic
from pincompile.pipeline import Result
from pincompile.repoconfig import Survive, repo_config

__all__ = [
    "PRIORITY",
    "Loss",
    "Over",
    "Report",
    "Room",
    "Short",
    "Survival",
    "compile_tree",
    "counted_for",
    "diff_check",
    "simulate",
    "survive_rule",
    "tree_check",
]

CAPACITY_REVISION = "capacity"
"""The revision a capacity check compiles at (nothing is expanded or written)."""


def simulate(result: Result, lose: str = "zone", required: Sequence[str] = ("reserved",),
             *, jobs: int = 1) -> Report:
    """Lose each zone (``lose="zone"``) or cluster of ``result``'s fleet in turn
    (``result`` compiled without errors; it need not be expanded). With ``jobs`` > 1 half
    the losses are simulated in a forked process."""
    from pincompile.capacity.losses import domains, headroom, lose_one, summed

    every = domains(result.catalog, lose)
    base = summed(result.plan.placed.values())

    def some(part: Sequence[tuple[str, list[str]]]) -> list[Loss]:
        return [lose_one(result, lose, name, clusters, base) for name, clusters in part]

    if jobs > 1 and len(every) > 1:
        from pincompile.forked import Forked

        half = len(every) // 2
        other = Forked(some, every[half:])
        losses = some(every[:half]) + other.result()
    else:
        losses = some(every)
    order = [t for t in PRIORITY if t in required]
    return Report(lose, tuple(order), losses, headroom(result, base))


def compile_tree(root: Path, cache_dir: Path | None = None, jobs: int = 1) -> Result:
    """The spec tree at ``root`` checked and placed, not expanded (what :func:`simulate`
    needs), reusing unchanged files' parsed specs from the cache at ``cache_dir``."""
    from pincompile.compiler import Compiler
    from pincompile.source.filecache import Store
    from pincompile.source.readahead import read_ahead

    store = Store(cache_dir) if cache_dir is not None else None
    compiler = Compiler(store, remember=False, jobs=jobs)
    return compiler.compile(read=read_ahead(root, cache_dir, jobs), expand=False,
                            revision=CAPACITY_REVISION)


def survive_rule(sources: Mapping[str, str]) -> Survive | None:
    """The loss ``pincompile.yaml`` (among ``sources``) requires the fleet to survive."""
    return repo_config(sources)[0].survive


def tree_check(root: Path, result: Result, rule: Survive, cache_dir: Path | None = None,
               jobs: int = 1) -> list[Diagnostic]:
    """``validate``'s loss check of the valid tree at ``root``: an error per way a
    required tier would not survive. ``result`` is the validation's (compiled
    again, placed only, when it holds no placement: an incremental validation)."""
    from pincompile.capacity.check import diagnostics, findings

    if result.plan is None or not result.plan.placed:
        result = compile_tree(root, cache_dir, jobs)
    report = simulate(result, rule.lose, rule.tiers, jobs=jobs)
    return diagnostics(findings(report), result.catalog)


@dataclass
class Survival:
    """``diff``'s loss check: errors for what the head revision breaks, at the change
    that breaks it, and what the base revision already broke (not blamed on the change)."""

    rule: Survive
    errors: list[Diagnostic]
    already: list[str]

    def to_json(self) -> dict[str, object]:
        return {"lose": self.rule.lose, "tiers": list(self.rule.tiers),
                "errors": [d.to_dict() for d in self.errors], "alreadyInBase": self.already}


def diff_check(base: Result, head: Result) -> Survival | None:
    """The loss check of two compiled revisions, when the head's ``pincompile.yaml``
    requires one (None otherwise)."""
    from pincompile.capacity.check import changed_specs, diagnostics, regressions

    rule = survive_rule(head.sources)
    if rule is None:
        return None
    new, old = regressions(simulate(base, rule.lose, rule.tiers),
                           simulate(head, rule.lose, rule.tiers))
    errors = diagnostics(new, head.catalog, changed_specs(base.catalog, head.catalog))
    return Survival(rule, errors, sorted(d.message for d in diagnostics(old, head.catalog)))
