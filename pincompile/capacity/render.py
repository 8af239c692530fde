"""``pincompile capacity`` for people: one row per loss, what would not fit, and the
headroom per cluster and tier (``-o json`` is :meth:`Report.to_json`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal

from pincompile.capacity import Survival
from pincompile.capacity.model import PRIORITY, Loss, Report, Room, ref
from pincompile.models.types import format_quantity

#: Resources the headroom table shows, when some cluster has them (json has every one).
SHOWN = (("cpu", "CPU"), ("memory", "MEMORY"), ("nvidia.com/gpu", "GPU"))


GIB = Decimal(2**30)
BYTES = ("memory", "storage", "ephemeral-storage")


def amount(value: Decimal, resource: str) -> str:
    """A quantity for people: cores and GiB with at most one decimal (rounded toward
    zero, so room is never overstated), counts whole; ``-o json`` keeps exact
    quantities."""
    if resource == "cpu":
        return _one_decimal(value)
    if resource in BYTES:
        return _one_decimal(value / GIB) + "Gi"
    return format_quantity(value, resource)


def _one_decimal(value: Decimal) -> str:
    tenths = int(value * 10)
    text = f"{abs(tenths) // 10}" if tenths % 10 == 0 else f"{abs(tenths) / 10:.1f}"
    return f"-{text}" if tenths < 0 else text


def _verdict(loss: Loss, tier: str) -> str:
    short = sum(1 for s in loss.short if s.tier == tier)
    over = sum(1 for o in loss.over if o.tier == tier)
    if not short and not over:
        return "fits"
    parts = []
    if short:
        parts.append(f"{short} app{'s' if short != 1 else ''} short")
    if over:
        parts.append(f"{over} pool{'s' if over != 1 else ''} over")
    return ", ".join(parts)


def _room(room: Room | None) -> str:
    if room is None:
        return "-"
    q = room.resource
    return (f"{room.cluster} {q} {amount(room.free, q)} free of {amount(room.capacity, q)} "
            f"({room.share_free:.0%})")


def loss_rows(report: Report) -> list[list[str]]:
    """The table of losses: header first."""
    tiers = [t for t in PRIORITY if t != "preemptible" or any(
        s.tier == t for loss in report.losses for s in loss.short)]
    first = report.required[0] if report.required else "reserved"
    header = ["LOST", "CLUSTERS", "MOVED", *(t.upper() + ("*" if t in report.required else "")
                                            for t in tiers), f"TIGHTEST ({first})"]
    rows = [header]
    for loss in report.losses:
        rows.append([f"{loss.domain} {loss.name}", ", ".join(loss.clusters),
                     str(len(loss.moved)), *(_verdict(loss, t) for t in tiers),
                     _room(loss.tightest(first))])
    return rows


def problems(report: Report) -> list[str]:
    """One line per app the survivors cannot hold and per pool a loss overfills."""
    lines = []
    for loss in report.losses:
        what = f"{loss.domain} {loss.name}"
        for s in loss.short:
            needs = ", ".join(f"{r} {amount(v, r)}" for r, v in s.missing.items()
                              if r != "pods")
            lines.append(f"{what}: {ref(s.key)} ({s.tier}) short {s.pods - s.placed} of "
                         f"{s.pods} pods ({needs}): {s.why}")
        for o in loss.over:
            u = o.use
            q = u.resource
            movers = ", ".join(f"{ref(k)} +{amount(v, q)}" for k, v in o.movers[:3])
            lines.append(f"{what}: {u.cluster} {u.pool} {q} over by {amount(u.over, q)} "
                         f"for {o.tier} (requested {amount(u.need, q)} of "
                         f"{amount(u.have, q)}); moved there: {movers or 'nothing'}")
        for key in loss.stranded:
            lines.append(f"{what}: {ref(key)} is lost with it (failover: false)")
    return lines


def headroom_rows(rooms: Sequence[Room]) -> list[list[str]]:
    """Headroom per cluster and tier: header first; one column per resource shown."""
    shown = [(r, h) for r, h in SHOWN if any(x.resource == r and x.capacity for x in rooms)]
    rows = [["CLUSTER", "ZONE", "TIER", "POOL", *(f"{h} FREE" for _, h in shown)]]
    keyed: dict[tuple[str, str, str], dict[str, Room]] = {}
    for room in rooms:
        keyed.setdefault((room.cluster, room.zone, room.tier), {})[room.resource] = room
    order = {t: i for i, t in enumerate(PRIORITY)}
    for (cluster, zone, tier), by_res in sorted(keyed.items(),
                                                key=lambda kv: (kv[0][0], order[kv[0][2]])):
        pools = sorted({by_res[r].pool for r, _ in shown if r in by_res})
        rows.append([cluster, zone, tier, " + ".join(pools),
                     *(_free(by_res.get(r)) for r, _ in shown)])
    return rows


def _free(room: Room | None) -> str:
    if room is None or (room.capacity == 0 and room.requested == 0):
        return "-"
    q = room.resource
    return f"{amount(room.free, q)} of {amount(room.capacity, q)}"


def requested_note() -> str:
    return ("requested as placement counts it: each app's replicas (a scaled app's "
            "maxReplicas) plus its rollout surge")



def report_survival(survival: Survival, sources: Mapping[str, str], *, markdown: bool) -> None:
    """``diff``'s loss check: its errors (located, on stderr; also as a section of the
    pull-request comment with ``markdown``) and what the base already broke (notes)."""
    import click

    from pincompile.diagnostics import render_human
    from pincompile.emit.compare import code_fence

    what = (f"the loss of any one {survival.rule.lose} "
            f"({', '.join(survival.rule.tiers)} workloads)")
    if survival.errors:
        text = render_human(survival.errors, sources)
        click.echo(text, err=True)
        n = len(survival.errors)
        click.echo(f"\n{n} error{'s' if n != 1 else ''}: the head would not survive {what}",
                   err=True)
        if markdown:
            fence = code_fence(text)
            click.echo(f"\n**❌ This change would not survive {what}**\n\n{fence}text\n"
                       f"{text}\n{fence}")
    for message in survival.already:
        click.echo(f"note: already so in the base (not this change): {message}", err=True)
