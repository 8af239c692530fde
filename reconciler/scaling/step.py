"""The PinScaler steps of a pass: rebalance HPA maxima toward busy clusters (decided by
:mod:`reconciler.scaling.rebalance`), and what a PinScaler's status says of its floor and
of its target's replicas per cluster."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

from pincompile.contract import Result, pods_held
from reconciler.clients.read import key_of
from reconciler.desired import Echo, MemberState, by_app, int_or_none, target_replicas
from reconciler.model import AppKey, Obj
from reconciler.scaling import rebalance
from reconciler.scaling.schedules import ScheduleError, hpa_floor
from reconciler.status import document


def rebalance_all(result: Result, members: dict[str, MemberState],
                  stored: dict[AppKey, dict[str, Any]], echo: Echo
                  ) -> dict[AppKey, dict[str, Any]]:
    """Move PinScalers' HPA maxima toward clusters running at their maximum (see
    :mod:`reconciler.scaling.rebalance`); returns the ``status.rebalance`` of every
    PinScaler whose maxima stand moved."""
    rebalanced: dict[AppKey, dict[str, Any]] = {}
    hpas = by_app(members.values(), lambda obj, app: (
        obj["kind"] == "HorizontalPodAutoscaler" and app[0] == "PinScaler"))
    for app, placed in sorted(hpas.items()):
        if any(members[c].error is not None for c in placed) or len(placed) < 2:
            continue
        compiled = {c: rebalance.Bounds(int(o["spec"].get("minReplicas", 1)),
                                        int(o["spec"]["maxReplicas"]))
                    for c, (_, o) in placed.items()}
        state = (stored.get(app) or {}).get("rebalance")
        bounds = rebalance.stored_bounds(state, compiled)
        observed = {c: rebalance.observe(members[c].live.get(key_of(o)))
                    for c, (_, o) in placed.items()}
        caps = {c: pods_held(result, app, c) for c in placed}
        step = rebalance.step_for(sum(b.max for b in compiled.values()))
        moved = rebalance.rebalance(bounds, observed, caps, step, compiled)
        if moved.moves:
            reason = "; ".join(moved.moves)
            echo(f"{'/'.join(app)}: rebalanced: {reason}")
            rebalanced[app] = rebalance.state_of(compiled, moved.bounds, reason)
        elif bounds != compiled and state is not None:
            rebalanced[app] = dict(state)
        for cluster, (index, obj) in placed.items():
            b = moved.bounds[cluster]
            if b != compiled[cluster]:
                members[cluster].desired[index] = {**obj, "spec": {
                    **obj["spec"], "minReplicas": b.min, "maxReplicas": b.max}}
    return rebalanced


def hpas_by_app(members: dict[str, MemberState]
                ) -> dict[AppKey, list[tuple[MemberState, Obj]]]:
    """Every desired HPA with its member, by app (one walk over the desired objects, not
    one per app: those walks grow with apps squared)."""
    out: dict[AppKey, list[tuple[MemberState, Obj]]] = defaultdict(list)
    for member in members.values():
        for obj in member.desired:
            if obj["kind"] == "HorizontalPodAutoscaler" and (app := document.app_of(obj)):
                out[app].append((member, obj))
    return out


def floor_status(hpas: list[tuple[MemberState, Obj]], now: datetime) -> dict[str, Any]:
    """A PinScaler's floor now (the sum of its ``hpas``' minReplicas, from
    :func:`hpas_by_app`) and the window raising it."""
    floor, active = 0, []
    for _member, obj in hpas:
        floor += int(obj["spec"].get("minReplicas", 1))
        try:
            found = hpa_floor(obj, now)
        except ScheduleError:
            found = None
        # ``obj`` already carries the floor, so an open window is what tells
        if found is not None and found.active:
            active += [f"{w.schedule.cron} ({w.schedule.timezone}) until "
                       f"{w.end.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}"
                       for w in found.active]
    out: dict[str, Any] = {"floor": floor}
    if active:
        out["activeSchedule"] = sorted(set(active))[0]
    return out


def replicas_seen(hpas: list[tuple[MemberState, Obj]],
                  previous: dict[str, Any] | None) -> dict[str, int]:
    """Per cluster, the replicas the Deployment a PinScaler's HPA scales ran when that
    cluster was last read (kept for a cluster that fails: failover carries them)."""
    old = (previous or {}).get("clusterReplicas") or {}
    out = {str(c): n for c, n in old.items() if int_or_none(n) is not None}
    for member, obj in hpas:
        if member.error is not None:
            continue
        replicas = target_replicas(member, obj)
        if replicas is None:
            out.pop(member.name, None)
        else:
            out[member.name] = replicas
    return dict(sorted(out.items()))
