"""One reconcile pass over the fleet: compile result in, clusters converged, status out.

The pass (:meth:`Reconciler.pass_of`) is a sequence of steps, each in the folder of its
concern with its pure decision beside it: the host first (CRDs, every spec as its custom
resource, stored state), then every member cluster in parallel is read (one LIST per
kind); failover (``failover/``) and PinScaler rebalancing (``scaling/``) rewrite the
desired objects; zone-by-zone rollouts (``rollout/``) hold later zones; every member is
planned through server-side dry-runs and applied in dependency order, with pruning; the
rollouts advance; and one aggregated status per app is written to the host
(``publish.py``). Between the writes and the statuses the caller may wait for health:
:meth:`Reconciler.pass_of` hands it the pass in flight, whose checks it repeats on its
clock (:meth:`Reconciler.settle`, ``health/wait.py``). A cluster that fails is reported
(its apps say Unknown) and never stops the others.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pincompile.contract import Result, placements
from reconciler import desired, failover, host_sync
from reconciler.clients import pace
from reconciler.clients.access import ClusterAccess
from reconciler.clients.cache import ClusterCache
from reconciler.clients.connect import ClusterUnreachable, Connection
from reconciler.clients.read import Key
from reconciler.clock import SYSTEM_CLOCK, Clock
from reconciler.desired import Echo, MemberState, with_floor
from reconciler.errors import CLUSTER_ERRORS, explain
from reconciler.failover import step as failover_step
from reconciler.health import wait as health_wait
from reconciler.host_sync import HOST
from reconciler.host_writes import HostWrites
from reconciler.model import AppKey, ClusterReport, Left, Obj, PassReport, Unconverged
from reconciler.plan import applied, narrow
from reconciler.plan.change import Action
from reconciler.plan.cluster_plan import Options, plan_cluster, read_live
from reconciler.plan.execute import execute
from reconciler.plan.memo import PlanMemo
from reconciler.progress import Progress
from reconciler.rollout import step as rollout_step
from reconciler.rollout.plan import AppRollout
from reconciler.scaling import step as scaling_step
from reconciler.status import publish
from reconciler.status.events import EventLog
from reconciler.status.follow import StatusFollower
from reconciler.step_timings import COLLECTOR, Steps

__all__ = ["HOST", "Flight", "MemberState", "Reconciler"]

Connect = Callable[[str, str], ClusterAccess]
"""(cluster name, kubeconfig context) -> how the pass reaches that cluster."""


@dataclass
class Flight:
    """A pass between its writes and its statuses (:meth:`Reconciler.pass_of`)."""

    report: PassReport
    steps: Steps
    started: float
    collected: float
    """The process's collector seconds when the pass started."""
    found: dict[str, MemberState] = field(default_factory=dict)
    stored: dict[AppKey, dict[str, Any]] = field(default_factory=dict)
    host: dict[AppKey, Obj] = field(default_factory=dict)
    rollouts: dict[AppKey, AppRollout] = field(default_factory=dict)
    moves: dict[AppKey, failover.AppMove] = field(default_factory=dict)
    waiting: health_wait.Waiting = field(default_factory=health_wait.Waiting)
    """What the pass wrote and has not seen healthy yet, per member."""
    result: Result | None = None
    """What the pass applies (set once it got as far as its writes)."""
    applied: bool = False
    """The pass got as far as its writes (the specs compiled)."""

    @property
    def progressing(self) -> bool:
        return self.waiting.progressing


class Reconciler:
    """Reconciles a compile result against the fleet a kubeconfig reaches."""

    def __init__(self, kubeconfig: str | None, host_context: str = HOST, *,
                 clusters: Collection[str] | None = None, options: Options | None = None,
                 echo: Echo = lambda _m: None, watch: bool = False,
                 clock: Callable[[], datetime] | None = None,
                 failover_after: float = failover.DEFAULT_GRACE,
                 failback_step: str = failover.DEFAULT_STEP,
                 failover_clock: Callable[[], float] = SYSTEM_CLOCK,
                 progress: Progress | None = None, apps: narrow.Targets | None = None,
                 connect: Connect | None = None) -> None:
        self.kubeconfig, self.host_context = kubeconfig, host_context
        self._connect = connect or (lambda name, context: Connection(name, context, kubeconfig))
        """How a cluster is reached: a :class:`Connection` through the kubeconfig, unless
        another factory is given (the tests' in-memory clusters)."""
        self.only = set(clusters) if clusters else None
        self.apps = apps if apps is not None and not apps.everything else None
        """Only these apps' objects are written and pruned (:mod:`reconciler.plan.narrow`)."""
        self.options = options or Options()
        self.echo = echo
        self.connections: dict[str, ClusterAccess] = {}
        self.watch = watch
        """Keep a watch-based cache per cluster (a long-running reconciler)."""
        self.caches: dict[str, ClusterCache] = {}
        self.host_cache: ClusterCache | None = None
        """Long-running (``watch``): the host's CRDs, spec resources and namespaces."""
        self.statuses: dict[AppKey, dict[str, Any]] = {}
        self.rollouts: dict[AppKey, AppRollout] = {}
        """The zone-by-zone rollouts :meth:`plan` decided."""
        """The last pass's status document per app."""
        self.memos: dict[str, PlanMemo] = {}
        """Long-running (``watch``): per cluster, what the last plan found unchanged."""
        self.clock = clock or (lambda: datetime.now(UTC))
        """The instant scheduled HPA floors are evaluated at (injected by tests)."""
        self.failover_after, self.failback_step = failover_after, failback_step
        """How long a member may fail before it is lost; how much of an app moves back per
        pass once it returns."""
        self.failover_clock = failover_clock
        """Whose epoch seconds a member's failure is timed by (serve: the process's clock)."""
        self.cluster_states: dict[str, failover.ClusterState] = {}
        """Each member's failover state after the last pass."""
        self.failover_notes: list[str] = []
        """Problems of the last pass's placement without the lost clusters."""
        self.rebalanced: dict[AppKey, dict[str, Any]] = {}
        """PinScalers whose HPA maxima were moved between clusters: ``status.rebalance``."""
        self.floor_totals: dict[AppKey, int] = {}
        """Apps an HPA scales whose replicas in lost clusters the survivors' floors hold:
        the replicas the app runs in all (its status counts against them)."""
        self.host_writes = HostWrites()
        """The pass in flight's host writes that run beside its other steps."""
        self.host_specs: Future[str | None] | None = None
        """Those of them that write the specs' resources."""
        self.events = EventLog()
        """The Events this reconciler recorded: a repeat counts up instead (serve)."""
        self.progress = progress or Progress()
        """Told how far each cluster is (``apply``'s progress display)."""
        self.digests = applied.Digests()
        """The digests of the pass in flight's desired objects (each computed once)."""
        self.passing = threading.Lock()
        """Held while a pass runs."""
        self.pass_wanted = threading.Event()
        """Set while a pass waits for ``passing`` (the status follower lets go)."""
        self.follower = StatusFollower(lambda: self.statuses, self._cached, self._write_one,
                                       self.passing, wanted=self.pass_wanted,
                                       echo=echo) if watch else None
        """Long-running (``watch``): app statuses follow member objects between passes."""

    # --- connections -----------------------------------------------------------------------

    def connect(self, name: str, context: str) -> ClusterAccess:
        if name not in self.connections:
            self.connections[name] = self._connect(name, context)
        return self.connections[name]

    def close(self) -> None:
        if self.follower is not None:
            self.follower.close()
        for cache in [*self.caches.values(), *([self.host_cache] if self.host_cache else [])]:
            cache.close()
        self.caches.clear()
        self.host_cache = None
        for conn in self.connections.values():
            conn.close()
        self.connections.clear()

    # --- the pass --------------------------------------------------------------------------

    def members(self, result: Result) -> dict[str, MemberState]:
        """The member clusters this reconciler targets, with their desired objects."""
        return desired.members(result, self.only, self.clock(), self.echo)

    def plan(self, result: Result, resources: dict[AppKey, Obj] | None = None
             ) -> dict[str, MemberState]:
        """Read and plan every member cluster; writes nothing (``pincompile plan``).
        ``resources``: the apps' resources on the host, where each rollout stands (none:
        every rollout starts again). The zone-by-zone rollouts decided are kept in
        :attr:`rollouts` (what their gates hold)."""
        found = self.members(result)
        self._in_parallel(found, self._read)
        stored = {k: (cr.get("status") or {}) for k, cr in (resources or {}).items()}
        self.rollouts = rollout_step.hold_zones(found, stored, result.revision,
                                                rollout_step.paused_apps(resources or {}))
        self._plan_all(found, self.rollouts, preview=True)
        return found

    @contextlib.contextmanager
    def pass_of(self, result: Result) -> Iterator[Flight]:
        """One pass up to its writes, the pass lock held: the caller may check their health
        (:meth:`check_health`, :meth:`settle`) as often as it likes; leaving the block
        writes the statuses and completes ``flight.report`` (not after an exception). Never
        raises for a cluster's failure: it is in the report."""
        self.pass_wanted.set()
        with self.passing:
            self.pass_wanted.clear()
            try:
                flight = self._begin(result)
                yield flight
                self._finish(flight)
            finally:
                self.host_writes.join()
                # the next pass reuses what it can prove the same (serve: all but a push's
                # changed apps); a one-shot reconciler's let go of the pass's objects
                self.digests = self.digests.carried() if self.watch else applied.Digests()

    def _begin(self, result: Result) -> Flight:
        report = PassReport(revision=result.revision)
        flight = Flight(report, Steps(report.steps), time.monotonic(), COLLECTOR.seconds)
        self.host_writes, self.host_specs = HostWrites(), None
        if not result.ok:
            report.error = f"{len(result.diagnostics)} error(s) in the specs: nothing applied"
            return flight
        step = flight.steps
        with ThreadPoolExecutor(max_workers=1) as pool:  # the host beside the members' reads
            host_synced = pool.submit(step.timed("host sync", self._host_sync), result, report)
            with step("desired"):
                found = self.members(result)
            with step("read"):
                self._in_parallel(found, self._read)
            with step("host sync (wait)"):
                host = host_synced.result()
        with step("decide"):
            stored = {k: (cr.get("status") or {}) for k, cr in host.items()}
            moves = self._failover(result, found, stored, report)
            if not moves:  # while shares move between clusters, bounds do not
                self.rebalanced = scaling_step.rebalance_all(result, found, stored, self.echo)
            rollouts = rollout_step.hold_zones(found, stored, report.revision,
                                               rollout_step.paused_apps(host))
        with step("plan"):
            self._plan_all(found, rollouts)
        if self.apps is not None:
            wanted = self.apps
            rollouts = {k: r for k, r in rollouts.items()
                        if narrow.wanted_app(k, host.get(k), wanted)}
            for member in found.values():
                if member.plan is not None:
                    narrow.narrow(member.plan, wanted, self.options.max_prune)
        with step("apply"):
            self._in_parallel(found, self._apply)
            rollout_step.advance(rollouts, found, self.connections.get(HOST), self.echo)
            rollout_step.report_halts(rollouts, found)
        host_conn = self._host_ok(report)
        if host_conn is not None:  # the Events of those writes, during the wait
            self.host_writes.submit(publish.write_events, host_conn, found, report.revision,
                                    self.events)
        flight.found, flight.stored, flight.host, flight.result = found, stored, host, result
        flight.rollouts, flight.moves, flight.applied = rollouts, moves, True
        for member in found.values():
            if member.error is None and member.plan is not None:
                objects = health_wait.waited_for(member.plan)
                flight.waiting.objects[member.name] = objects
                flight.waiting.totals[member.name] = len(objects)
        return flight

    def check_health(self, flight: Flight) -> None:
        """Read once, in every member, what the pass wrote and has not seen healthy yet
        (the statuses are built from what this finds)."""
        waiting = flight.waiting

        def one(member: MemberState) -> None:
            assert member.conn is not None
            objects = waiting.objects.get(member.name)
            if objects:
                cache = self.caches.get(member.name)
                waiting.objects[member.name] = health_wait.check(
                    member.conn, objects, member.live, cache.snapshot() if cache else None)
                self.progress.health(member.name, waiting.healthy(member.name),
                                     waiting.totals[member.name])

        self._in_parallel(flight.found, one)
        for member in flight.found.values():
            if member.error is not None:  # it failed: nothing more to wait for there
                waiting.objects.pop(member.name, None)

    def settle(self, flight: Flight, timeout: float, clock: Clock = SYSTEM_CLOCK) -> None:
        """Check health every second of ``clock`` until what the pass wrote is healthy or
        ``timeout`` seconds have passed."""
        seconds = health_wait.settle(flight.waiting, lambda: self.check_health(flight),
                                     timeout, clock)
        flight.report.steps["wait"] = round(seconds, 3)

    def _finish(self, flight: Flight) -> None:
        """Write every app's status to the host; complete the report."""
        if not flight.applied:
            return
        report, found = flight.report, flight.found
        with flight.steps("publish"):
            decided = publish.Decided(flight.rollouts, flight.moves, self.floor_totals,
                                      self.rebalanced, publish.revisions_of(flight.host),
                                      placements(flight.result) if flight.result else {})
            self._publish(found, flight.stored, report, decided, flight.host)
            self._store_cluster_states(flight.stored, report)
        for member in found.values():
            report.clusters[member.name] = member.report or ClusterReport(
                member.name, error=member.error)
        report.seconds = time.monotonic() - flight.started
        report.steps["gc"] = round(COLLECTOR.seconds - flight.collected, 3)  # within the steps

    def _in_parallel(self, members: dict[str, MemberState],
                     step: Callable[[MemberState], None]) -> None:
        def guarded(member: MemberState) -> None:
            if member.error is not None:
                return
            try:
                step(member)
            except CLUSTER_ERRORS as exc:  # TimeoutError is an OSError
                member.error = explain(exc)
                self.echo(f"{member.name}: FAILED: {member.error}")
                self.progress.failed(member.name, member.error)

        with ThreadPoolExecutor(max_workers=max(1, min(8, len(members)))) as pool:
            list(pool.map(guarded, members.values()))

    def _read(self, member: MemberState) -> None:
        member.conn = self.connect(member.name, member.context)
        if not self.watch:
            member.live = read_live(member.conn)
            return
        if member.name not in self.caches:
            self.caches[member.name] = ClusterCache(
                member.conn, self.follower.changed if self.follower else None)
        member.live = self.caches[member.name].snapshot()

    def _cached(self, cluster: str) -> dict[Key, Obj] | str | None:
        """A member's watch cache (for the follower): None when this reconciler has none."""
        cache = self.caches.get(cluster)
        if cache is None:
            return None
        try:
            return cache.snapshot(timeout=5.0)
        except ClusterUnreachable as exc:
            return str(exc)

    def _write_one(self, app: AppKey, doc: dict[str, Any]) -> None:
        from reconciler import host

        conn = self.connections.get(HOST)
        if conn is None:
            raise ClusterUnreachable("the host cluster is not connected yet")
        host.write_status(conn, app, doc)

    def _plan_all(self, found: dict[str, MemberState],
                  rollouts: Mapping[AppKey, AppRollout], *, preview: bool = False) -> None:
        """Plan every member; what the rollouts' gates hold there is never re-recorded
        (``preview``: the plans are only shown, see :func:`plan_cluster`)."""
        gated = rollout_step.gated(rollouts, found)
        self._in_parallel(found, lambda m: self._plan(m, gated.get(m.name, ()), preview))

    def _plan(self, member: MemberState, gated: Collection[Key] = (),
              preview: bool = False) -> None:
        """Plan one member (``gated``: what a rollout gate holds there, never re-recorded)."""
        assert member.conn is not None
        member.plan = plan_cluster(member.conn, member.desired, member.live, self.options,
                                   member.initial_replicas, self._memo(member.name),
                                   self.digests, gated, preview=preview)
        self.progress.planned(member.name, len(member.desired), len(member.plan.pending))

    def _memo(self, cluster: str) -> PlanMemo | None:
        return self.memos.setdefault(cluster, PlanMemo()) if self.watch else None

    def _apply(self, member: MemberState) -> None:
        assert member.conn is not None and member.plan is not None
        started = time.monotonic()
        plan = member.plan
        member.report = ClusterReport(member.name)
        self.progress.writing(member.name)
        if plan.blocked:
            self.echo(f"{member.name}: prune refused: {plan.blocked}")
            member.report.unconverged.append(Unconverged(Left.PRUNE_HELD, "", plan.blocked))
        done = execute(member.conn, plan, workers=self.options.workers, echo=self.echo,
                       on_done=lambda _change: self.progress.applied(
                           member.name, pace.at_once(member.conn)))
        for change in plan.of(Action.CONFLICT, Action.INVALID):  # planned, or found creating
            left = Left.CONFLICT if change.action is Action.CONFLICT else Left.REJECTED
            member.report.unconverged.append(Unconverged(left, change.name, change.reason))
            self.echo(f"{member.name}: {left} {change.name}: {change.reason}")
        memo = self._memo(member.name)
        if memo is not None:
            memo.record_writes(done)
        refs = {a: [c.ref(member.name) for c in cs] for a, cs in done.items()}
        member.report.created = refs[Action.CREATE]
        member.report.updated = refs[Action.UPDATE]
        member.report.replaced = refs[Action.REPLACE]
        member.report.pruned = refs[Action.PRUNE]
        member.report.unchanged = len(plan.of(Action.UNCHANGED))
        member.report.recorded = refs[Action.UNCHANGED]
        for change in plan.pending + plan.restamps:
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
            live, crds, self.host_cache = host_sync.live_state(conn, self.host_cache,
                                                               self.watch)
            wanted = host.desired_objects(result.catalog, report.revision,
                                          desired.app_digests(result.manifests,
                                                              self.digests))
            plan = plan_cluster(conn, wanted, live, self.options, memo=self._memo(HOST))
            if self.apps is not None:
                narrow.narrow(plan, self.apps, self.options.max_prune, host=True)
            host_report = ClusterReport(HOST, unchanged=len(plan.of(Action.UNCHANGED)))
            report.clusters[HOST] = host_report
            # written while the members are planned and written: nothing waits for them
            # before the statuses (which need the resources)
            self.host_specs = self.host_writes.submit(host_sync.write_plan, conn, plan,
                                                      host_report, crds)
            return host_sync.apps_after(live, plan)
        except CLUSTER_ERRORS as exc:
            report.clusters[HOST] = ClusterReport(HOST, error=explain(exc))
            self.echo(f"host: FAILED: {explain(exc)}")
            return {}

    def _host_ok(self, report: PassReport) -> ClusterAccess | None:
        """The host's connection when this pass reached it without an error."""
        conn = self.connections.get(HOST)
        if conn is None or HOST not in report.clusters or \
                report.clusters[HOST].error is not None:
            return None
        return conn

    # --- failover ----------------------------------------------------------------------------

    def _failover(self, result: Result, found: dict[str, MemberState],
                  stored: dict[AppKey, dict[str, Any]], report: PassReport
                  ) -> dict[AppKey, failover.AppMove]:
        """The failover step (see :mod:`reconciler.failover.step`); returns what moved."""
        self.failover_notes, self.floor_totals = [], {}
        if report.clusters.get(HOST) is None or report.clusters[HOST].error is not None:
            self.cluster_states = {}
            return {}  # the state lives on the host: without it, nothing moves
        done = failover_step.fail_over(
            result, found, stored, grace=self.failover_after, step=self.failback_step,
            now=self.failover_clock(), instant=self.clock(),
            floor=lambda obj, at: with_floor(obj, at, self.echo), echo=self.echo)
        self.cluster_states, self.failover_notes = done.states, done.notes
        self.floor_totals = done.floor_totals
        return done.moves

    def _store_cluster_states(self, stored: dict[AppKey, dict[str, Any]],
                              report: PassReport) -> None:
        host_conn = self.connections.get(HOST)
        if host_conn is None or report.clusters.get(HOST) is None:
            return
        error = failover_step.write_states(host_conn, self.cluster_states, stored)
        if error is not None:
            report.clusters[HOST].error = error

    # --- health and status ---------------------------------------------------------------------

    def _publish(self, found: dict[str, MemberState], stored: dict[AppKey, dict[str, Any]],
                 report: PassReport, decided: publish.Decided, host: dict[AppKey, Obj]
                 ) -> None:
        """Every app's status document (only the wanted apps' in a narrowed pass), written
        to the host when it changed."""
        self.statuses = publish.documents(found, stored, report.revision, decided,
                                          self.clock())
        if self.apps is not None:
            wanted = self.apps
            self.statuses = {k: doc for k, doc in self.statuses.items()
                             if narrow.wanted_app(k, host.get(k), wanted)}
        # the resources the statuses are written to (the Events go on beside them)
        self._host_failed(report, self.host_specs.result() if self.host_specs else None)
        host_conn = self._host_ok(report)
        if host_conn is not None:
            report.statuses = dict(self.statuses)  # the follower rewrites self.statuses
            self._host_failed(report, publish.write(host_conn, self.statuses, stored,
                                                    report.revision, decided.moves,
                                                    self.events))
        self._host_failed(report, self.host_writes.join())

    def _host_failed(self, report: PassReport, error: str | None) -> None:
        if error is not None and HOST in report.clusters \
                and report.clusters[HOST].error is None:
            report.clusters[HOST].error = error
            self.echo(f"host: FAILED: {error}")

