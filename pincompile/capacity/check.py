"""The loss check of ``validate`` and ``diff``: what a :class:`~.model.Report` finds for
the tiers that must survive, as located errors.

An app the survivors cannot hold is reported at its ``spec.placement``; a pool a loss
overfills at the Cluster field that sizes it, naming the apps that moved there. ``diff``
reports only what the head revision breaks (:func:`regressions`), at the change that
breaks it: a moved app's spec when that changed and the cluster did not.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from decimal import Decimal

from pincompile.capacity.model import Key, Loss, Over, Report, Short, ref
from pincompile.catalog import Catalog, Entry
from pincompile.diagnostics import Diagnostic, Location
from pincompile.models import Workload
from pincompile.models.types import format_quantity

#: Moved apps named in an overfilled pool's error.
NAMED_MOVERS = 3


@dataclass(frozen=True)
class Finding:
    """One way a required tier does not survive one loss."""

    loss: Loss
    item: Short | Over

    @property
    def ident(self) -> tuple[str, ...]:
        """The same finding in two revisions has the same identity."""
        if isinstance(self.item, Short):
            return (self.loss.name, "short", *self.item.key)
        u = self.item.use
        return (self.loss.name, "over", u.cluster, u.pool, u.resource)

    @property
    def amount(self) -> Decimal:
        if isinstance(self.item, Short):
            return Decimal(self.item.pods - self.item.placed)
        return self.item.use.over


def findings(report: Report) -> list[Finding]:
    """Every shortfall and overfilled pool of a required tier, each pool once (the
    highest tier's)."""
    out: dict[tuple[str, ...], Finding] = {}
    for loss in report.losses:
        items: list[Short | Over] = [*loss.short, *loss.over]
        for item in items:
            if item.tier in report.required:
                found = Finding(loss, item)
                out.setdefault(found.ident, found)
    return list(out.values())


def regressions(base: Report, head: Report) -> tuple[list[Finding], list[Finding]]:
    """(what ``head`` breaks that ``base`` did not, or breaks by more; what both break)."""
    before = {f.ident: f.amount for f in findings(base)}
    new: list[Finding] = []
    old: list[Finding] = []
    for found in findings(head):
        (old if found.amount <= before.get(found.ident, Decimal(-1)) else new).append(found)
    return new, old


def changed_specs(base: Catalog, head: Catalog) -> set[Key]:
    """Keys of ``head``'s specs that are new or whose document differs from ``base``'s."""
    was = {e.resource.key: e.doc.data for e in base.entries}
    return {e.resource.key for e in head.entries if was.get(e.resource.key) != e.doc.data}


def diagnostics(found: Sequence[Finding], catalog: Catalog,
                changed: Collection[Key] | None = None) -> list[Diagnostic]:
    """Located errors for ``found`` (``changed``: the specs a diff changed, to point at)."""
    return sorted(set(_diagnostic(f, catalog, changed) for f in found))


def _what(loss: Loss) -> str:
    where = "" if loss.clusters == [loss.name] else f" ({', '.join(loss.clusters)})"
    return f"{loss.domain} {loss.name}{where}"


def _app_at(entry: Entry[Workload]) -> Location:
    spec = entry.doc.data.get("spec") if isinstance(entry.doc.data, dict) else None
    if isinstance(spec, dict) and "placement" in spec:
        return entry.at("spec", "placement")
    return entry.at("metadata", "name")


def _named(catalog: Catalog, key: Key) -> str:
    entry = catalog.workloads_by_key.get(key)
    if entry is None:
        return ref(key)
    at = entry.at("metadata", "name")
    return f"{ref(key)} ({at.file}:{at.line})"


def _diagnostic(found: Finding, catalog: Catalog, changed: Collection[Key] | None
                ) -> Diagnostic:
    loss, item = found.loss, found.item
    code = f"{loss.domain}-loss"
    hint = (f"`pincompile capacity --lose {loss.domain}` shows every loss and the headroom "
            "per cluster and tier")
    if isinstance(item, Short):
        entry = catalog.workloads_by_key[item.key]
        needs = ", ".join(f"{r} {format_quantity(v, r)}" for r, v in item.missing.items()
                          if r != "pods")
        return _app_at(entry).error(
            code, f"{ref(item.key)} ({item.tier}) would not fit if {_what(loss)} were lost: "
            f"{item.pods - item.placed} of its {item.pods} pods have no room ({needs}); "
            f"{item.why}",
            f"widen spec.placement beyond {loss.domain} {loss.name}, or add capacity where it "
            f"may run; {hint}")
    u = item.use
    named = ", ".join(f"{_named(catalog, k)} +{format_quantity(v, u.resource)}"
                      for k, v in item.movers[:NAMED_MOVERS])
    more = len(item.movers) - NAMED_MOVERS
    named = (named + (f" and {more} more" if more > 0 else "")) or "nothing"
    cluster_key = ("Cluster", "", u.cluster)
    at = catalog.clusters[u.cluster].at(*u.field)
    if changed is not None and cluster_key not in changed:
        blamed = [k for k, _ in item.movers if k in changed]
        if blamed:
            at = _app_at(catalog.workloads_by_key[blamed[0]])
    return at.error(
        code, f"if {_what(loss)} were lost, cluster '{u.cluster}' would be over its "
        f"{u.pool} for {u.resource} by {format_quantity(u.over, u.resource)}: "
        f"{' and '.join(sorted(u.tiers))} workloads would request "
        f"{format_quantity(u.need, u.resource)} of {format_quantity(u.have, u.resource)}; "
        f"moved there: {named}",
        f"add {u.resource} to '{u.cluster}' (spec.{'.'.join(u.field[1:])}) or to other "
        f"clusters these apps may use, or lower their replicas; {hint}")
