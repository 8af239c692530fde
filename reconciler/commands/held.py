"""What ``plan`` says of zone-by-zone rollouts: the Deployments whose new template a gate
holds in a later zone (they show no change of their own, the pass keeps their live
template), per cluster and per zone, and what each waits for."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from reconciler.clients.read import key_of
from reconciler.desired import MemberState
from reconciler.model import AppKey, Obj
from reconciler.rollout.plan import (
    COMPLETE,
    HALTED,
    TEMPLATE_HASH_ANNOTATION,
    AppRollout,
    template_hash,
)


@dataclass(frozen=True)
class Held:
    """A change a rollout gate holds: the object, its zone, what it waits for."""

    object: str
    zone: str
    until: str

    def to_json(self) -> dict[str, Any]:
        return {"object": self.object, "zone": self.zone, "until": self.until}


def held_changes(rollouts: Mapping[AppKey, AppRollout], members: Mapping[str, MemberState],
                 wanted: Callable[[Obj], bool]) -> dict[str, list[Held]]:
    """cluster → the Deployments (of the ``wanted`` ones) a gate keeps on their live
    template although the specs give them another one."""
    out: dict[str, list[Held]] = {}
    for plan in rollouts.values():
        if plan.state.phase == COMPLETE:
            continue
        for cluster, desired in sorted(plan.desired.items()):
            live = members[cluster].live.get(key_of(desired))
            if plan.allowed(cluster) or live is None or not wanted(desired) or \
                    _template_of(live) == template_hash(desired):
                continue
            meta = desired["metadata"]
            out.setdefault(cluster, []).append(Held(
                f"{desired['kind']}/{meta.get('namespace')}/{meta['name']}",
                plan.zone_of[cluster], waits_for(plan, plan.zone_of[cluster])))
    return out


def _template_of(live: Obj) -> str | None:
    return (live["metadata"].get("annotations") or {}).get(TEMPLATE_HASH_ANNOTATION)


def waits_for(plan: AppRollout, zone: str) -> str:
    """What a change held in ``zone`` waits for: the zone before it healthy, a paused
    rollout resumed, or (halted) a new template."""
    zones = plan.state.zones
    if plan.state.phase == HALTED:
        return (f"a new template: the rollout halted at {plan.state.message or 'a zone'}"
                if plan.state.message else "a new template: the rollout halted")
    if plan.paused_by:
        return f"`pincompile rollout resume` (paused by {plan.paused_by})"
    before = zones[max(0, zones.index(zone) - 1)]
    return f"{before} is healthy"


def held_summary(held: Mapping[str, list[Held]]) -> list[str]:
    """One line per zone and what it waits for: ``us-east-1b: 2 changes held until
    us-east-1a is healthy``."""
    by_zone: dict[tuple[str, str], int] = {}
    for items in held.values():
        for item in items:
            by_zone[(item.zone, item.until)] = by_zone.get((item.zone, item.until), 0) + 1
    return [f"{zone}: {n} change{'s' if n != 1 else ''} held until {until}"
            for (zone, until), n in sorted(by_zone.items())]


def rollouts_on_host(kubeconfig: str | None, host_context: str) -> dict[AppKey, Obj]:
    """The zone-by-zone apps' resources on the host (where their rollouts stand), or none
    when the host cannot be read (every rollout then plans from its first zone)."""
    from reconciler.clients.connect import Connection, KubeconfigError
    from reconciler.errors import CLUSTER_ERRORS
    from reconciler.host import read_apps, spec_kinds
    from reconciler.rollout.pause import ROLLOUT_APP_KINDS

    try:
        conn = Connection("host", host_context, kubeconfig)
    except (KubeconfigError, *CLUSTER_ERRORS):
        return {}
    try:
        return read_apps(conn, [k for k in spec_kinds() if k.kind in ROLLOUT_APP_KINDS])
    except CLUSTER_ERRORS:
        return {}
    finally:
        conn.close()
