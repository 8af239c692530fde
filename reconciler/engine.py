"""One reconcile pass over the fleet: compile result in, clusters converged, status out.

The pass: the host first (CRDs, every spec as its custom resource, stored rollout state),
then every member cluster in parallel — read live state (one LIST per kind), plan through
server-side dry-runs, apply in dependency order, prune — then zone-by-zone gates, a wait
for health, and one aggregated status per app written to the host. A cluster that fails
is reported (its apps say Unknown) and never stops the others.
"""

from __future__ import annotations

import contextlib
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubernetes.dynamic.exceptions import DynamicApiError

from pincompile.manifest import Manifest
from pincompile.pipeline import Result
from reconciler import applied, failover, rollout, status
from reconciler.cache import ClusterCache
from reconciler.clients import read, write
from reconciler.clients.connect import ClusterUnreachable, Connection, KubeconfigError
from reconciler.clients.read import Key, key_of
from reconciler.health import assess
from reconciler.host import AppKey
from reconciler.kinds import MANAGED_KINDS
from reconciler.model import (
    ClusterReport,
    Health,
    Left,
    Obj,
    ObjectRef,
    PassReport,
    Phase,
    Unconverged,
)
from reconciler.scaling import ScheduleError, hpa_floor, rebalance, with_scheduled_floor
from reconciler.sync import (
    Action,
    ClusterPlan,
    Options,
    PlanMemo,
    execute,
    plan_cluster,
    read_live,
)

HOST = "host"
NAMESPACE = next(k for k in MANAGED_KINDS if k.kind == "Namespace")
Echo = Callable[[str], None]
#: Run-to-completion kinds: ``apply`` waits for them to start, not to finish.
UNWAITED_KINDS = ("Job", "CronJob", "TFJob", "PyTorchJob")


@dataclass
class MemberState:
    """One member cluster during a pass."""

    name: str
    context: str
    zone: str
    desired: list[Obj] = field(default_factory=list)
    initial_replicas: dict[Key, int] = field(default_factory=dict)
    """Autoscaled workloads: their share of the app's replicas here (set at creation)."""
    conn: Connection | None = None
    live: dict[Key, Obj] = field(default_factory=dict)
    plan: ClusterPlan | None = None
    report: ClusterReport | None = None
    error: str | None = None


def _explain(exc: BaseException) -> str:
    if isinstance(exc, DynamicApiError):
        return f"API error {exc.status}: {exc.summary()}"
    return str(exc) or type(exc).__name__


class Reconciler:
    """Reconciles a compile result against the fleet a kubeconfig reaches."""

    def __init__(self, kubeconfig: str | None, host_context: str = HOST, *,
                 clusters: Collection[str] | None = None, options: Options | None = None,
                 wait: bool = True, timeout: float = 300.0, echo: Echo = lambda _m: None,
                 watch: bool = False, clock: Callable[[], datetime] | None = None,
                 failover_after: float = failover.DEFAULT_GRACE,
                 failback_step: str = failover.DEFAULT_STEP,
                 failover_clock: Callable[[], float] = time.time) -> None:
        self.kubeconfig, self.host_context = kubeconfig, host_context
        self.only = set(clusters) if clusters else None
        self.options = options or Options()
        self.wait, self.timeout, self.echo = wait, timeout, echo
        self.connections: dict[str, Connection] = {}
        self.watch = watch
        """Keep a watch-based cache per cluster (a long-running reconciler)."""
        self.caches: dict[str, ClusterCache] = {}
        self.statuses: dict[AppKey, dict[str, Any]] = {}
        """The last pass's status document per app."""
        self.memos: dict[str, PlanMemo] = {}
        """Long-running (``watch``): per cluster, what the last plan found unchanged."""
        self.clock = clock or (lambda: datetime.now(UTC))
        """The instant scheduled HPA floors are evaluated at (injected by tests)."""
        self.failover_after, self.failback_step = failover_after, failback_step
        """How long a member may fail before it is lost; how much of an app moves back per
        pass once it returns."""
        self.failover_clock = failover_clock
        self.cluster_states: dict[str, failover.ClusterState] = {}
        """Each member's failover state after the last pass."""
        self.failover_notes: list[str] = []
        """Problems of the last pass's placement without the lost clusters."""
        self.rebalanced: dict[AppKey, dict[str, Any]] = {}
        """PinScalers whose HPA maxima were moved between clusters: ``status.rebalance``."""
        self.held: dict[AppKey, int] = {}
        """Apps an HPA scales whose replicas in lost clusters the survivors' floors hold:
        the replicas the app runs in all (its status counts against them)."""

    # --- connections -----------------------------------------------------------------------

    def connect(self, name: str, context: str) -> Connection:
        if name not in self.connections:
            self.connections[name] = Connection(name, context, self.kubeconfig)
        return self.connections[name]

    def close(self) -> None:
        for cache in self.caches.values():
            cache.close()
        self.caches.clear()
        for conn in self.connections.values():
            conn.close()
        self.connections.clear()

    # --- the pass --------------------------------------------------------------------------

    def members(self, result: Result) -> dict[str, MemberState]:
        now = self.clock()
        by_cluster: dict[str, list[Manifest]] = defaultdict(list)
        for manifest in result.manifests:
            by_cluster[manifest.cluster].append(manifest)
        out: dict[str, MemberState] = {}
        for name, entry in sorted(result.catalog.clusters.items()):
            if self.only is not None and name not in self.only:
                continue
            spec = entry.resource
            desired = [self._with_floor(m.obj, now) for m in by_cluster.get(name, [])]
            out[name] = MemberState(name, spec.context, spec.spec.zone, desired,
                                    _shares(result.plan, name, desired))
        return out

    def _with_floor(self, obj: Obj, now: datetime) -> Obj:
        """An HPA with ``minReplicas`` raised to its scheduled floor at ``now``."""
        if obj["kind"] != "HorizontalPodAutoscaler":
            return obj
        try:
            return with_scheduled_floor(obj, now)
        except ScheduleError as exc:
            self.echo(f"HorizontalPodAutoscaler/{obj['metadata']['name']}: schedules ignored: "
                      f"{exc}")
            return obj

    def plan(self, result: Result) -> dict[str, MemberState]:
        """Read and plan every member cluster; writes nothing (``pincompile plan``)."""
        members = self.members(result)
        self._in_parallel(members, self._read)
        self._hold_zones(result, members, stored={})
        self._in_parallel(members, self._plan)
        return members

    def run(self, result: Result) -> PassReport:
        """One pass. Never raises for a cluster's failure: it is in the report."""
        started = time.monotonic()
        report = PassReport(revision=_revision(result))
        if not result.ok:
            report.error = f"{len(result.diagnostics)} error(s) in the specs: nothing applied"
            return report
        host = self._host_sync(result, report)
        members = self.members(result)
        self._in_parallel(members, self._read)
        stored = {k: (cr.get("status") or {}) for k, cr in host.items()}
        moves = self._failover(result, members, stored, report)
        if not moves:  # while shares move between clusters, bounds do not
            self._rebalance(result, members, stored)
        rollouts = self._hold_zones(result, members, stored)
        self._in_parallel(members, self._plan)
        self._in_parallel(members, self._apply)
        self._advance(rollouts, members)
        _report_halts(rollouts, members)
        if self.wait:
            self._wait_healthy(members)
        self._write_status(result, members, rollouts, stored, report, moves)
        self._write_cluster_states(stored, report)
        for member in members.values():
            report.clusters[member.name] = member.report or ClusterReport(
                member.name, error=member.error)
        report.seconds = time.monotonic() - started
        return report

    def _in_parallel(self, members: dict[str, MemberState],
                     step: Callable[[MemberState], None]) -> None:
        def guarded(member: MemberState) -> None:
            if member.error is not None:
                return
            try:
                step(member)
            except (ClusterUnreachable, KubeconfigError, DynamicApiError, OSError,
                    TimeoutError) as exc:
                member.error = _explain(exc)
                self.echo(f"{member.name}: FAILED: {member.error}")

        with ThreadPoolExecutor(max_workers=max(1, min(8, len(members)))) as pool:
            list(pool.map(guarded, members.values()))

    def _read(self, member: MemberState) -> None:
        member.conn = self.connect(member.name, member.context)
        if not self.watch:
            member.live = read_live(member.conn)
            return
        if member.name not in self.caches:
            self.caches[member.name] = ClusterCache(member.conn)
        member.live = self.caches[member.name].snapshot()

    def _plan(self, member: MemberState) -> None:
        assert member.conn is not None
        member.plan = plan_cluster(member.conn, member.desired, member.live, self.options,
                                   member.initial_replicas, self._memo(member.name))

    def _memo(self, cluster: str) -> PlanMemo | None:
        return self.memos.setdefault(cluster, PlanMemo()) if self.watch else None

    def _apply(self, member: MemberState) -> None:
        assert member.conn is not None and member.plan is not None
        started = time.monotonic()
        plan = member.plan
        member.report = ClusterReport(member.name)
        if plan.blocked:
            self.echo(f"{member.name}: prune refused: {plan.blocked}")
            member.report.unconverged.append(Unconverged(Left.PRUNE_HELD, "", plan.blocked))
        for change in plan.of(Action.CONFLICT, Action.INVALID):
            left = Left.CONFLICT if change.action is Action.CONFLICT else Left.REJECTED
            member.report.unconverged.append(Unconverged(left, change.name, change.reason))
            self.echo(f"{member.name}: {left} {change.name}: {change.reason}")
        done = execute(member.conn, plan, workers=self.options.workers, echo=self.echo)
        refs = {a: [c.ref(member.name) for c in cs] for a, cs in done.items()}
        member.report.created = refs[Action.CREATE]
        member.report.updated = refs[Action.UPDATE]
        member.report.replaced = refs[Action.REPLACE]
        member.report.pruned = refs[Action.PRUNE]
        member.report.unchanged = len(plan.of(Action.UNCHANGED))
        for change in plan.pending:
            if change.predicted is not None:
                member.live[change.key] = change.predicted
            if change.action is Action.PRUNE:
                member.live.pop(change.key, None)
        member.report.seconds = time.monotonic() - started

    # --- host --------------------------------------------------------------------------------

    def _host_sync(self, result: Result, report: PassReport) -> dict[AppKey, Obj]:
        """CRDs, spec resources and their namespaces on the host; returns the app resources
        (with their stored status)."""
        from reconciler import host

        try:
            conn = self.connect(HOST, self.host_context)
            host.ensure_crds(conn)
            kinds = host.spec_kinds()
            live: dict[Key, Obj] = read.list_many(conn, [*kinds, NAMESPACE])
            desired = host.desired_objects(result.catalog, report.revision)
            plan = plan_cluster(conn, desired, live, self.options, memo=self._memo(HOST))
            done = execute(conn, plan)
            host_report = ClusterReport(HOST, unchanged=len(plan.of(Action.UNCHANGED)))
            host_report.created = [c.ref(HOST) for c in done[Action.CREATE]]
            host_report.updated = [c.ref(HOST) for c in done[Action.UPDATE]]
            host_report.pruned = [c.ref(HOST) for c in done[Action.PRUNE]]
            report.clusters[HOST] = host_report
            return host.read_apps(conn, kinds) if plan.pending else {
                host.app_key(o): o for k, o in live.items() if k[0] != "Namespace"}
        except (ClusterUnreachable, KubeconfigError, DynamicApiError, OSError) as exc:
            report.clusters[HOST] = ClusterReport(HOST, error=_explain(exc))
            self.echo(f"host: FAILED: {_explain(exc)}")
            return {}

    # --- failover ----------------------------------------------------------------------------

    def _failover(self, result: Result, members: dict[str, MemberState],
                  stored: dict[AppKey, dict[str, Any]], report: PassReport
                  ) -> dict[AppKey, failover.AppMove]:
        """Decide which members are lost or returning (state kept on the host) and, if
        any, re-place their share of every app on the others. Returns what moved."""
        self.failover_notes, self.held = [], {}
        if report.clusters.get(HOST) is None or report.clusters[HOST].error is not None:
            self.cluster_states = {}
            return {}  # the state lives on the host: without it, nothing moves
        now = self.failover_clock()
        states: dict[str, failover.ClusterState] = {}
        for name, entry in sorted(result.catalog.clusters.items()):
            previous = failover.ClusterState.from_json(
                name, stored.get(("Cluster", "", name), {}).get("failover"))
            cordoned = not entry.resource.spec.schedulable
            if name in members:
                states[name] = failover.observe(previous, name, error=members[name].error,
                                                cordoned=cordoned, now=now,
                                                grace=self.failover_after)
            elif cordoned:  # another reconciler (--cluster, a serve shard) watches it
                states[name] = failover.observe(previous, name, error=None, cordoned=True,
                                                now=now, grace=self.failover_after)
            else:
                states[name] = previous
        self.cluster_states = {n: s for n, s in states.items() if n in members}
        gone = failover.excluded(states)
        if not gone:
            return {}
        from pincompile.expand import expand_all
        from pincompile.placement import plan as place

        moved_plan, problems = place(result.catalog, lost=gone)
        manifests, more = expand_all(result.catalog, moved_plan, revision=_revision(result))
        self.failover_notes = sorted({d.message for d in [*problems, *more]})
        for note in self.failover_notes:
            self.echo(f"failover: {note}")
        instant = self.clock()
        # every cluster's part, members or not: an app's share in a cluster another
        # reconciler watches moves too
        normal: dict[str, list[Obj]] = {n: [] for n in result.catalog.clusters}
        for manifest in result.manifests:
            if manifest.cluster not in members:
                normal[manifest.cluster].append(self._with_floor(manifest.obj, instant))
        normal.update({n: m.desired for n, m in members.items()})
        moved: dict[str, list[Obj]] = defaultdict(list)
        for manifest in manifests:
            moved[manifest.cluster].append(self._with_floor(manifest.obj, instant))
        arranged = failover.arrange(normal, moved, states, self.failback_step)
        for name, member in members.items():
            member.desired = arranged.desired[name]
            member.initial_replicas = _shares(result.plan, name, member.desired)
            member.initial_replicas.update(_shares(moved_plan, name, [
                o for o in member.desired if status.app_of(o) in arranged.moved_apps]))
        self._hold_capacity(members, stored, arranged.moves, states)
        for name, state in self.cluster_states.items():
            if state.phase == failover.RETURNING and state.steps > 0 \
                    and name not in arranged.pending and members[name].error is None:
                self.cluster_states[name] = failover.ClusterState(name, failover.REACHABLE,
                                                                  since=now)
                self.echo(f"{name}: failback complete: every app is back")
        for name, state in self.cluster_states.items():
            if state.phase != failover.REACHABLE:
                self.echo(f"{name}: failover: {state.phase}: {state.reason}")
        return arranged.moves

    def _hold_capacity(self, members: dict[str, MemberState],
                       stored: dict[AppKey, dict[str, Any]],
                       moves: dict[AppKey, failover.AppMove],
                       states: dict[str, failover.ClusterState]) -> None:
        """Raise the surviving HPAs' floors of every PinScaler that ran in a lost cluster so
        they take over the replicas it ran there (see :func:`failover.hold_capacity`)."""
        hpas = _by_app((m for m in members.values() if m.error is None), lambda obj, app: (
            obj["kind"] == "HorizontalPodAutoscaler" and app[0] == "PinScaler"))
        for app, placed in sorted(hpas.items()):
            move = moves.get(app)
            lost = [c for c in (move.clusters if move else []) if states[c].phase
                    == failover.LOST]
            if not lost:
                continue
            seen = (stored.get(app) or {}).get("clusterReplicas") or {}
            previous = failover.Capacity.from_json(
                ((stored.get(app) or {}).get("failover") or {}).get("capacity"))
            running = {c: _target_replicas(members[c], obj) for c, (_, obj) in placed.items()}
            bounds = {c: (int(o["spec"].get("minReplicas", 1)), int(o["spec"]["maxReplicas"]))
                      for c, (_, o) in placed.items()}
            held = failover.hold_capacity({c: _int_or_none(seen.get(c)) for c in lost},
                                          {c: n for c, n in running.items() if n is not None},
                                          bounds, previous)
            if held is None or move is None:
                continue
            for cluster, (index, obj) in placed.items():
                members[cluster].desired[index] = failover.with_floor(obj, held.floors[cluster])
            move.capacity = held
            floors = ", ".join(f"{c}={n}" for c, n in sorted(held.floors.items()))
            move.message += (f"; the floors hold its {held.total} replicas "
                             f"({sum(held.carried.values())} from {', '.join(lost)}): {floors}")
            target = _target_app(members, placed)
            if target is not None:
                self.held[target] = held.total

    def _write_cluster_states(self, stored: dict[AppKey, dict[str, Any]],
                              report: PassReport) -> None:
        from reconciler import host

        host_conn = self.connections.get(HOST)
        if host_conn is None or report.clusters.get(HOST) is None:
            return
        for name, state in sorted(self.cluster_states.items()):
            doc = state.to_json()
            if stored.get(("Cluster", "", name), {}).get("failover") == doc:
                continue
            try:
                host.write_cluster_status(host_conn, name, {"failover": doc})
            except (ClusterUnreachable, KubeconfigError, DynamicApiError, OSError) as exc:
                report.clusters[HOST].error = _explain(exc)
                return

    # --- rebalancing ---------------------------------------------------------------------------

    def _rebalance(self, result: Result, members: dict[str, MemberState],
                   stored: dict[AppKey, dict[str, Any]]) -> None:
        """Move PinScalers' HPA maxima toward clusters running at their maximum (see
        :mod:`reconciler.scaling.rebalance`); the moved bounds are kept on the host."""
        self.rebalanced = {}
        hpas = _by_app(members.values(), lambda obj, app: (
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
            target = result.plan.scaler_targets.get(app) if result.plan else None
            decision = result.plan.decision(target) if target else None
            caps = {c: _pods_held(result, decision, c) for c in placed}
            step = rebalance.step_for(sum(b.max for b in compiled.values()))
            moved = rebalance.rebalance(bounds, observed, caps, step, compiled)
            if moved.moves:
                reason = "; ".join(moved.moves)
                self.echo(f"{'/'.join(app)}: rebalanced: {reason}")
                self.rebalanced[app] = rebalance.state_of(compiled, moved.bounds, reason)
            elif bounds != compiled and state is not None:
                self.rebalanced[app] = dict(state)
            for cluster, (index, obj) in placed.items():
                b = moved.bounds[cluster]
                if b != compiled[cluster]:
                    members[cluster].desired[index] = {**obj, "spec": {
                        **obj["spec"], "minReplicas": b.min, "maxReplicas": b.max}}

    # --- zone-by-zone ------------------------------------------------------------------------

    def _hold_zones(self, result: Result, members: dict[str, MemberState],
                    stored: dict[AppKey, dict[str, Any]]) -> dict[AppKey, rollout.AppRollout]:
        """Decide each zone-by-zone app's rollout and keep later zones on the old template."""
        by_app = _by_app((m for m in members.values() if m.error is None),
                         lambda obj, _app: rollout.is_zone_by_zone(obj))
        rollouts: dict[AppKey, rollout.AppRollout] = {}
        for app, placed in by_app.items():
            desired = {c: obj for c, (_, obj) in placed.items()}
            live = {c: members[c].live.get(key_of(obj)) for c, obj in desired.items()}
            state = rollout.State.from_json((stored.get(app) or {}).get("rollout"))
            plan = rollout.begin(app, desired, {c: members[c].zone for c in desired}, live,
                                 state, _revision(result))
            rollouts[app] = plan
            for cluster, (index, _) in placed.items():
                current = live[cluster]
                if plan.allowed(cluster) or current is None:
                    members[cluster].desired[index] = plan.desired[cluster]
                else:
                    members[cluster].desired[index] = rollout.hold(plan.desired[cluster],
                                                                   current)
        return rollouts

    def _advance(self, rollouts: dict[AppKey, rollout.AppRollout],
                 members: dict[str, MemberState]) -> None:
        from reconciler import host

        host_conn = self.connections.get(HOST)
        active = {a: r for a, r in rollouts.items() if r.state.phase == rollout.PROGRESSING
                  and all(members[c].error is None for c in r.desired)}

        def one(item: tuple[AppKey, rollout.AppRollout]) -> None:
            app, plan = item

            def apply(cluster: str, obj: Obj) -> None:
                conn = members[cluster].conn
                assert conn is not None
                members[cluster].live[key_of(obj)] = write.apply(conn, applied.stamp(obj))
                if members[cluster].report is not None:
                    members[cluster].report.updated.append(  # type: ignore[union-attr]
                        ObjectRef(cluster, obj["apiVersion"], obj["kind"],
                                  obj["metadata"].get("namespace"), obj["metadata"]["name"]))
                self.echo(f"{cluster}: rollout {obj['metadata']['name']} "
                          f"(zone {members[cluster].zone})")

            def fetch(cluster: str, obj: Obj) -> Obj | None:
                conn = members[cluster].conn
                assert conn is not None
                live = read.get(conn, obj)
                if live is not None:
                    members[cluster].live[key_of(obj)] = live
                return live

            def record(reason: str, message: str) -> None:
                self.echo(f"{app[0]}/{app[1]}/{app[2]}: {reason}: {message}")
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
            except (ClusterUnreachable, KubeconfigError, DynamicApiError, OSError) as exc:
                plan.state.message = f"rollout interrupted: {_explain(exc)}"

        with ThreadPoolExecutor(max_workers=max(1, min(8, len(active)))) as pool:
            list(pool.map(one, active.items()))

    # --- health and status ---------------------------------------------------------------------

    def _wait_healthy(self, members: dict[str, MemberState]) -> None:
        """Wait (bounded by ``timeout``) until what this pass wrote is healthy."""
        deadline = time.monotonic() + self.timeout

        def one(member: MemberState) -> None:
            assert member.conn is not None and member.plan is not None
            waiting = [c.desired for c in member.plan.pending
                       if c.action is not Action.PRUNE and c.desired is not None
                       and c.desired["kind"] not in UNWAITED_KINDS]
            while waiting and time.monotonic() < deadline:
                still = []
                for obj in waiting:
                    live = read.get(member.conn, obj)
                    if live is not None:
                        member.live[key_of(obj)] = live
                    if live is None or assess(live).phase is Phase.PROGRESSING:
                        still.append(obj)
                waiting = still
                if waiting:
                    time.sleep(1.0)

        self._in_parallel(members, one)

    def _write_status(self, result: Result, members: dict[str, MemberState],
                      rollouts: dict[AppKey, rollout.AppRollout],
                      stored: dict[AppKey, dict[str, Any]], report: PassReport,
                      moves: dict[AppKey, failover.AppMove] | None = None) -> None:
        from reconciler import host

        views: dict[AppKey, list[status.ClusterView]] = defaultdict(list)
        written: set[AppKey] = set()
        for member in members.values():
            per_app: dict[AppKey, status.ClusterView] = {}
            problems = _problems(member)
            for obj in member.desired:
                app = status.app_of(obj)
                if app is None:
                    continue
                view = per_app.setdefault(app, status.ClusterView(member.name,
                                                                  error=member.error))
                key = key_of(obj)
                ref = ObjectRef(member.name, obj["apiVersion"], obj["kind"], key[1] or None,
                                key[2])
                view.objects.append((ref, member.live.get(key)))
                if key in problems:
                    view.problems[ref] = problems[key]
            for app, view in per_app.items():
                views[app].append(view)
            if member.plan is not None:
                for change in member.plan.pending:
                    app = status.app_of(change.desired or change.live or {})
                    if app is not None:
                        written.add(app)
        self.statuses = {}
        host_conn = self.connections.get(HOST)
        for app in sorted(views):
            plan = rollouts.get(app)
            doc = status.app_status(
                views[app], revision=report.revision,
                rollout=plan.state.to_json() if plan else None,
                previous=stored.get(app), applied=app in written)
            if app in self.held:
                _count_held(doc, self.held[app])
            if app[0] == "PinScaler":
                doc.update(_floor_status(app, members, self.clock()))
                seen = _replicas_seen(app, members, stored.get(app))
                if seen:
                    doc["clusterReplicas"] = seen
                if app in self.rebalanced:
                    doc["rebalance"] = self.rebalanced[app]
            move = (moves or {}).get(app)
            if move is not None:
                doc["failover"] = move.to_json()
                doc["message"] = "; ".join(m for m in (move.message, doc["message"]) if m)
            self.statuses[app] = doc
            if host_conn is None or HOST not in report.clusters or \
                    report.clusters[HOST].error is not None:
                continue
            try:
                if status.changed(stored.get(app), doc):
                    host.write_status(host_conn, app, doc)
                for reason, text in _events(app, members, report.revision):
                    host.record_event(host_conn, app, reason, text)
                if move is not None and (stored.get(app) or {}).get("failover") \
                        != doc["failover"]:
                    host.record_event(host_conn, app, move.phase, move.message,
                                      warning=move.phase != "FailingBack")
            except (ClusterUnreachable, KubeconfigError, DynamicApiError, OSError) as exc:
                report.clusters[HOST].error = _explain(exc)


def _problems(member: MemberState) -> dict[Key, Health]:
    """The objects of a member its plan could not apply, with the health they show."""
    if member.plan is None:
        return {}
    out: dict[Key, Health] = {}
    for change in member.plan.of(Action.CONFLICT, Action.INVALID):
        left = Left.CONFLICT if change.action is Action.CONFLICT else Left.REJECTED
        out[change.key] = Health(Phase.DEGRADED, f"{left}: {change.reason}")
    return out


def _report_halts(rollouts: dict[AppKey, rollout.AppRollout],
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


def _by_app(members: Iterable[MemberState], wanted: Callable[[Obj, AppKey], bool]
            ) -> dict[AppKey, dict[str, tuple[int, Obj]]]:
    """The desired objects of apps that ``wanted`` picks: app -> cluster -> (index in that
    member's ``desired``, object), so a step can replace them in place."""
    out: dict[AppKey, dict[str, tuple[int, Obj]]] = defaultdict(dict)
    for member in members:
        for index, obj in enumerate(member.desired):
            app = status.app_of(obj)
            if app and wanted(obj, app):
                out[app][member.name] = (index, obj)
    return out


def _floor_status(app: AppKey, members: dict[str, MemberState],
                  now: datetime) -> dict[str, Any]:
    """A PinScaler's floor now (the sum of its HPAs' minReplicas) and the window raising it."""
    floor, active = 0, []
    for member in members.values():
        for obj in member.desired:
            if obj["kind"] == "HorizontalPodAutoscaler" and status.app_of(obj) == app:
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


def _pods_held(result: Result, decision: Any, cluster: str) -> int | None:
    """Pods of a placed app the capacity of ``cluster`` (the app's tier's pool) holds, as
    placement counts them (None: not limited)."""
    from pincompile.placement.context import pods_fit, pool_capacity, whole

    entry = result.catalog.clusters.get(cluster)
    if decision is None or entry is None:
        return None
    fit = pods_fit(pool_capacity(entry.resource, decision.tier), decision.pod_requests)
    return None if fit is None else whole(fit)


def _shares(plan: Any, cluster: str, desired: list[Obj]) -> dict[Key, int]:
    """Each autoscaled workload's share of its app's replicas in ``cluster`` (``plan``: a
    placement :class:`~pincompile.placement.Plan`)."""
    out: dict[Key, int] = {}
    for obj in desired:
        app = status.app_of(obj)
        decision = plan.decision(app) if app and plan else None
        if obj["kind"] != "Deployment" or decision is None:
            continue
        for shard in decision.shards:
            if shard.cluster == cluster and shard.min_replicas is not None:
                out[key_of(obj)] = shard.replicas
    return out


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _target_key(hpa: Obj) -> Key:
    """The Deployment an HPA scales."""
    return ("Deployment", str(hpa["metadata"].get("namespace") or ""),
            str(hpa["spec"]["scaleTargetRef"]["name"]))


def _target_replicas(member: MemberState, hpa: Obj) -> int | None:
    """``spec.replicas`` of the live Deployment ``hpa`` scales in ``member`` (None: none)."""
    live = member.live.get(_target_key(hpa))
    replicas = (live or {}).get("spec", {}).get("replicas") if live else None
    return _int_or_none(replicas)


def _target_app(members: dict[str, MemberState],
                placed: dict[str, tuple[int, Obj]]) -> AppKey | None:
    """The app whose Deployment the HPAs in ``placed`` scale."""
    for cluster, (_, hpa) in sorted(placed.items()):
        key = _target_key(hpa)
        for obj in members[cluster].desired:
            if key_of(obj) == key:
                return status.app_of(obj)
    return None


def _replicas_seen(app: AppKey, members: dict[str, MemberState],
                   previous: dict[str, Any] | None) -> dict[str, int]:
    """Per cluster, the replicas the Deployment a PinScaler's HPA scales ran when that
    cluster was last read (kept for a cluster that fails: failover carries them)."""
    old = (previous or {}).get("clusterReplicas") or {}
    out = {str(c): n for c, n in old.items() if _int_or_none(n) is not None}
    for member in members.values():
        for obj in member.desired:
            if obj["kind"] == "HorizontalPodAutoscaler" and status.app_of(obj) == app:
                if member.error is not None:
                    continue
                replicas = _target_replicas(member, obj)
                if replicas is None:
                    out.pop(member.name, None)
                else:
                    out[member.name] = replicas
    return dict(sorted(out.items()))


def _count_held(doc: dict[str, Any], total: int) -> None:
    """Count an app's status against the replicas the floors hold for it in all."""
    if doc.get("replicas", 0) >= total:
        return
    ready = int(doc.get("readyReplicas", 0))
    doc["replicas"], doc["ready"] = total, f"{ready}/{total}"
    if ready >= total or doc.get("phase") != str(Phase.HEALTHY):
        return
    doc["phase"] = str(Phase.PROGRESSING)
    doc["message"] = (f"{ready} of its {total} replicas ready: the other clusters take over "
                      "a lost cluster's")
    for condition in doc.get("conditions") or []:
        if condition.get("type") == "Ready":
            condition.update(status="False", reason=doc["phase"], message=doc["message"])


def _revision(result: Result) -> str:
    for manifest in result.manifests:
        rev = (manifest.obj["metadata"].get("annotations") or {}).get("pincompute.io/revision")
        if rev:
            return str(rev)
    return "unknown"


#: Event reason for each kind of write a pass makes.
EVENT_REASONS = {Action.CREATE: "Applied", Action.UPDATE: "Applied",
                 Action.REPLACE: "Replaced", Action.PRUNE: "Pruned"}


def _events(app: AppKey, members: dict[str, MemberState],
            revision: str) -> list[tuple[str, str]]:
    """One (reason, message) per kind of write this pass made for ``app``."""
    by_reason: dict[str, list[str]] = defaultdict(list)
    for member in sorted(members.values(), key=lambda m: m.name):
        if member.plan is None:
            continue
        for change in member.plan.pending:
            if status.app_of(change.desired or change.live or {}) == app:
                by_reason[EVENT_REASONS[change.action]].append(
                    f"{member.name}: {change.action} {change.name}")
    out = []
    for reason, lines in sorted(by_reason.items()):
        more = f" (+{len(lines) - 8} more)" if len(lines) > 8 else ""
        out.append((reason, f"revision {revision}: " + "; ".join(lines[:8]) + more))
    return out
