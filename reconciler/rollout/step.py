"""The rollout step of a pass: keep later zones of every zone-by-zone app on the old
template, then advance each rollout once the members are applied, recording halts."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kubernetes.dynamic.exceptions import DynamicApiError

from reconciler.clients import read, write
from reconciler.clients.access import ClusterAccess
from reconciler.clients.connect import ClusterUnreachable
from reconciler.clients.read import Key, key_of
from reconciler.desired import Echo, MemberState, by_app
from reconciler.errors import CLUSTER_ERRORS, explain
from reconciler.model import AppKey, Left, Obj, ObjectRef, Unconverged
from reconciler.plan import applied
from reconciler.rollout import pause
from reconciler.rollout import plan as rollout

Stored = dict[AppKey, dict[str, Any]]


def hold_zones(members: dict[str, MemberState], stored: Stored, revision: str,
               paused: Mapping[AppKey, str] | None = None
               ) -> dict[AppKey, rollout.AppRollout]:
    """Decide each zone-by-zone app's rollout and keep later zones on the old template.
    ``paused``: who paused which app's rollout (its resource's annotation on the host)."""
    placed_apps = by_app((m for m in members.values() if m.error is None),
                         lambda obj, _app: rollout.is_zone_by_zone(obj))
    rollouts: dict[AppKey, rollout.AppRollout] = {}
    for app, placed in placed_apps.items():
        desired = {c: obj for c, (_, obj) in placed.items()}
        live = {c: members[c].live.get(key_of(obj)) for c, obj in desired.items()}
        state = rollout.State.from_json((stored.get(app) or {}).get("rollout"))
        plan = rollout.begin(app, desired, {c: members[c].zone for c in desired}, live,
                             state, revision, (paused or {}).get(app))
        rollouts[app] = plan
        for cluster, (index, _) in placed.items():
            current = live[cluster]
            if plan.allowed(cluster) or current is None:
                members[cluster].desired[index] = plan.desired[cluster]
            else:
                members[cluster].desired[index] = rollout.hold(plan.desired[cluster], current)
    return rollouts


def gated(rollouts: Mapping[AppKey, rollout.AppRollout],
          members: Mapping[str, MemberState]) -> dict[str, set[Key]]:
    """cluster → the Deployments :func:`hold_zones` kept on their live template (a later
    zone waiting): their desired is not the app's, so they are never re-recorded
    (:attr:`reconciler.plan.cluster_plan.ClusterPlan.gated`)."""
    out: dict[str, set[Key]] = {}
    for plan in rollouts.values():
        for cluster, obj in plan.desired.items():
            key = key_of(obj)
            if not plan.allowed(cluster) and members[cluster].live.get(key) is not None:
                out.setdefault(cluster, set()).add(key)
    return out


def advance(rollouts: dict[AppKey, rollout.AppRollout], members: dict[str, MemberState],
            host_conn: ClusterAccess | None, echo: Echo) -> None:
    """Advance every progressing rollout whose clusters all answered (in parallel)."""
    active = {a: r for a, r in rollouts.items() if r.state.phase == rollout.PROGRESSING
              and all(members[c].error is None for c in r.desired)}
    with ThreadPoolExecutor(max_workers=max(1, min(8, len(active)))) as pool:
        list(pool.map(lambda app: _advance_one(app, active[app], members, host_conn, echo),
                      active))


def _advance_one(app: AppKey, plan: rollout.AppRollout, members: dict[str, MemberState],
                 host_conn: ClusterAccess | None, echo: Echo) -> None:
    from reconciler import host

    def apply(cluster: str, obj: Obj) -> None:
        conn = members[cluster].conn
        assert conn is not None
        members[cluster].live[key_of(obj)] = write.apply(conn, applied.stamp(obj))
        if members[cluster].report is not None:
            members[cluster].report.updated.append(  # type: ignore[union-attr]
                ObjectRef(cluster, obj["apiVersion"], obj["kind"],
                          obj["metadata"].get("namespace"), obj["metadata"]["name"]))
        echo(f"{cluster}: rollout {obj['metadata']['name']} (zone {members[cluster].zone})")

    def fetch(cluster: str, obj: Obj) -> Obj | None:
        conn = members[cluster].conn
        assert conn is not None
        live = read.get(conn, obj)
        if live is not None:
            members[cluster].live[key_of(obj)] = live
        return live

    def record(reason: str, message: str) -> None:
        echo(f"{app[0]}/{app[1]}/{app[2]}: {reason}: {message}")
        if host_conn is not None:
            with contextlib.suppress(ClusterUnreachable, DynamicApiError, OSError):
                host.record_event(host_conn, app, reason, message,
                                  warning=reason == "RolloutHalted")

    def save(state: rollout.State) -> None:
        if host_conn is not None:
            with contextlib.suppress(ClusterUnreachable, DynamicApiError, OSError):
                host.write_status(host_conn, app, {"rollout": state.to_json()})

    if plan.started_new:
        save(plan.state)
    try:
        rollout.advance(plan, apply=apply, fetch=fetch, record=record, save=save)
    except CLUSTER_ERRORS as exc:
        plan.state.message = f"rollout interrupted: {explain(exc)}"


def report_halts(rollouts: dict[AppKey, rollout.AppRollout],
                 members: dict[str, MemberState]) -> None:
    """A halted rollout leaves every cluster that kept the old template unconverged."""
    for app, plan in sorted(rollouts.items()):
        if plan.state.phase != rollout.HALTED:
            continue
        for cluster in sorted(plan.desired):
            report = members[cluster].report
            if report is not None and not plan.allowed(cluster):
                report.unconverged.append(Unconverged(
                    Left.ROLLOUT_HALTED, "/".join(app), plan.state.message))


def paused_apps(resources: Mapping[AppKey, Obj]) -> dict[AppKey, str]:
    """Who paused which app's rollout, from the apps' resources on the host."""
    return {app: user for app, cr in resources.items()
            if (user := pause.paused_by(cr)) is not None}
