"""The failover step of a pass: observe each member (state kept on the host), and while a
cluster is lost or returning, rewrite the members' desired objects from the placement
without it (:mod:`reconciler.failover.decide` decides how)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pincompile.contract import Result, place_without
from reconciler.clients.access import ClusterAccess
from reconciler.clients.read import key_of
from reconciler.desired import (
    Echo,
    MemberState,
    by_app,
    int_or_none,
    shares,
    target_key,
    target_replicas,
)
from reconciler.errors import CLUSTER_ERRORS, explain
from reconciler.failover import decide
from reconciler.model import AppKey, Obj
from reconciler.status import document

Stored = dict[AppKey, dict[str, Any]]


@dataclass
class Failover:
    """What failover decided in one pass."""

    states: dict[str, decide.ClusterState] = field(default_factory=dict)
    """Each member's state after the pass."""
    moves: dict[AppKey, decide.AppMove] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    """Problems of the placement without the lost clusters."""
    floor_totals: dict[AppKey, int] = field(default_factory=dict)
    """Apps an HPA scales whose lost replicas the survivors' floors hold: their total."""


def observe_all(result: Result, members: dict[str, MemberState], stored: Stored, now: float,
                grace: float) -> dict[str, decide.ClusterState]:
    """Every cluster's state this pass (members observed; others as stored, or cordoned)."""
    states: dict[str, decide.ClusterState] = {}
    for name, entry in sorted(result.catalog.clusters.items()):
        previous = decide.ClusterState.from_json(
            name, stored.get(("Cluster", "", name), {}).get("failover"))
        cordoned = not entry.resource.spec.schedulable
        if name in members:
            states[name] = decide.observe(previous, name, error=members[name].error,
                                          cordoned=cordoned, now=now, grace=grace)
        elif cordoned:  # another reconciler (--cluster, a serve shard) watches it
            states[name] = decide.observe(previous, name, error=None, cordoned=True,
                                          now=now, grace=grace)
        else:
            states[name] = previous
    return states


def fail_over(result: Result, members: dict[str, MemberState], stored: Stored, *,
              grace: float, step: str, now: float, instant: datetime,
              floor: Callable[[Obj, datetime], Obj], echo: Echo) -> Failover:
    """Decide which members are lost or returning and, if any, re-place their share of
    every app on the others (``grace``: how long a member may fail before it is lost;
    ``step``: how much of an app moves back per pass; ``floor``: an HPA at its scheduled
    floor at ``instant``)."""
    states = observe_all(result, members, stored, now, grace)
    out = Failover({n: s for n, s in states.items() if n in members})
    gone = decide.excluded(states)
    if not gone:
        return out
    placed = place_without(result, gone)
    out.notes = placed.notes
    for note in out.notes:
        echo(f"failover: {note}")
    # every cluster's part, members or not: an app's share in a cluster another
    # reconciler watches moves too
    normal: dict[str, list[Obj]] = {n: [] for n in result.catalog.clusters}
    for manifest in result.manifests:
        if manifest.cluster not in members:
            normal[manifest.cluster].append(floor(manifest.obj, instant))
    normal.update({n: m.desired for n, m in members.items()})
    moved: dict[str, list[Obj]] = defaultdict(list)
    for manifest in placed.manifests:
        moved[manifest.cluster].append(floor(manifest.obj, instant))
    arranged = decide.arrange(normal, moved, states, step)
    for name, member in members.items():
        member.desired = arranged.desired[name]
        member.initial_replicas = shares(result.plan, name, member.desired)
        member.initial_replicas.update(shares(placed.plan, name, [
            o for o in member.desired if document.app_of(o) in arranged.moved_apps]))
    out.floor_totals = hold_capacity(members, stored, arranged.moves, states)
    for name, state in out.states.items():
        if state.phase == decide.RETURNING and state.steps > 0 \
                and name not in arranged.pending and members[name].error is None:
            out.states[name] = decide.ClusterState(name, decide.REACHABLE, since=now)
            echo(f"{name}: failback complete: every app is back")
    for name, state in out.states.items():
        if state.phase != decide.REACHABLE:
            echo(f"{name}: failover: {state.phase}: {state.reason}")
    out.moves = arranged.moves
    return out


def hold_capacity(members: dict[str, MemberState], stored: Stored,
                  moves: dict[AppKey, decide.AppMove],
                  states: dict[str, decide.ClusterState]) -> dict[AppKey, int]:
    """Raise the surviving HPAs' floors of every PinScaler that ran in a lost cluster so
    they take over the replicas it ran there (see :func:`decide.hold_capacity`). Returns
    the replicas held per target app."""
    held_apps: dict[AppKey, int] = {}
    hpas = by_app((m for m in members.values() if m.error is None), lambda obj, app: (
        obj["kind"] == "HorizontalPodAutoscaler" and app[0] == "PinScaler"))
    for app, placed in sorted(hpas.items()):
        move = moves.get(app)
        lost = [c for c in (move.clusters if move else []) if states[c].phase == decide.LOST]
        if move is None or not lost:
            continue
        seen = (stored.get(app) or {}).get("clusterReplicas") or {}
        previous = decide.Capacity.from_json(
            ((stored.get(app) or {}).get("failover") or {}).get("capacity"))
        running = {c: target_replicas(members[c], obj) for c, (_, obj) in placed.items()}
        bounds = {c: (int(o["spec"].get("minReplicas", 1)), int(o["spec"]["maxReplicas"]))
                  for c, (_, o) in placed.items()}
        held = decide.hold_capacity({c: int_or_none(seen.get(c)) for c in lost},
                                    {c: n for c, n in running.items() if n is not None},
                                    bounds, previous)
        if held is None:
            continue
        for cluster, (index, obj) in placed.items():
            members[cluster].desired[index] = decide.with_floor(obj, held.floors[cluster])
        move.capacity = held
        floors = ", ".join(f"{c}={n}" for c, n in sorted(held.floors.items()))
        move.message += (f"; the floors hold its {held.total} replicas "
                         f"({sum(held.carried.values())} from {', '.join(lost)}): {floors}")
        target = _target_app(members, placed)
        if target is not None:
            held_apps[target] = held.total
    return held_apps


def _target_app(members: dict[str, MemberState],
                placed: dict[str, tuple[int, Obj]]) -> AppKey | None:
    """The app whose Deployment the HPAs in ``placed`` scale."""
    for cluster, (_, hpa) in sorted(placed.items()):
        key = target_key(hpa)
        for obj in members[cluster].desired:
            if key_of(obj) == key:
                return document.app_of(obj)
    return None


def write_states(conn: ClusterAccess, states: dict[str, decide.ClusterState],
                 stored: Stored) -> str | None:
    """Store each member's state on the host where it changed; returns the error that
    stopped it, if one did. A member without its Cluster resource on the host (a pass
    narrowed to some apps writes none) has nowhere to keep it."""
    from reconciler import host

    for name, state in sorted(states.items()):
        doc = state.to_json()
        if ("Cluster", "", name) not in stored \
                or stored[("Cluster", "", name)].get("failover") == doc:
            continue
        try:
            host.write_cluster_status(conn, name, {"failover": doc})
        except CLUSTER_ERRORS as exc:
            return explain(exc)
    return None
