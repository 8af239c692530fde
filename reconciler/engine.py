"""One reconcile pass over the fleet: compile result in, clusters converged, status out.

The pass (:meth:`Reconciler.run`) is a sequence of steps, each in the folder of its
concern with its pure decision beside it: the host first (CRDs, every spec as its custom
resource, stored state), then every member cluster in parallel is read (one LIST per
kind); failover (``failover/``) and PinScaler rebalancing (``scaling/``) rewrite the
desired objects; zone-by-zone rollouts (``rollout/``) hold later zones; every member is
planned through server-side dry-runs and applied in dependency order, with pruning; the
rollouts advance; a wait for health; and one aggregated status per app is written to the
host (``publish.py``). A cluster that fails is reported (its apps say Unknown) and never
stops the others.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from pincompile.contract import Result, placements
from reconciler import desired, failover
from reconciler.clients import read
from reconciler.clients.cache import ClusterCache
from reconciler.clients.connect import ClusterUnreachable, Connection
from reconciler.clients.read import Key, key_of
from reconciler.desired import Echo, MemberState, with_floor
from reconciler.errors import CLUSTER_ERRORS, explain
from reconciler.failover import step as failover_step
from reconciler.health import assess
from reconciler.kinds import MANAGED_KINDS
from reconciler.model import AppKey, ClusterReport, Left, Obj, PassReport, Phase, Unconverged
from reconciler.plan import applied, narrow
from reconciler.plan.change import Action, Change
from reconciler.plan.cluster_plan import Options, plan_cluster, read_live
from reconciler.plan.execute import execute
from reconciler.plan.memo import PlanMemo
from reconciler.progress import Progress
from reconciler.rollout import step as rollout_step
from reconciler.rollout.plan import AppRollout
from reconciler.scaling import step as scaling_step
from reconciler.status import publish
from reconciler.status.follow import StatusFollower
from reconciler.step_timings import COLLECTOR, Steps

__all__ = ["HOST", "MemberState", "Reconciler"]

HOST = "host"
NAMESPACE = next(k for k in MANAGED_KINDS if k.kind == "Namespace")
#: Run-to-completion kinds: ``apply`` waits for them to start, not to finish.
UNWAITED_KINDS = ("Job", "CronJob", "TFJob", "PyTorchJob")


class Reconciler:
    """Reconciles a compile result against the fleet a kubeconfig reaches."""

    def __init__(self, kubeconfig: str | None, host_context: str = HOST, *,
                 clusters: Collection[str] | None = None, options: Options | None = None,
                 wait: bool = True, timeout: float = 300.0, echo: Echo = lambda _m: None,
                 watch: bool = False, clock: Callable[[], datetime] | None = None,
                 failover_after: float = failover.DEFAULT_GRACE,
                 failback_step: str = failover.DEFAULT_STEP,
                 failover_clock: Callable[[], float] = time.time,
                 progress: Progress | None = None, apps: narrow.Targets | None = None
                 ) -> None:
        self.kubeconfig, self.host_context = kubeconfig, host_context
        self.only = set(clusters) if clusters else None
        self.apps = apps if apps is not None and not apps.everything else None
        """Only these apps' objects are written and pruned (:mod:`reconciler.plan.narrow`)."""
        self.options = options or Options()
        self.wait, self.timeout, self.echo = wait, timeout, echo
        self.connections: dict[str, Connection] = {}
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
        self.cluster_states: dict[str, failover.ClusterState] = {}
        """Each member's failover state after the last pass."""
        self.failover_notes: list[str] = []
        """Problems of the last pass's placement without the lost clusters."""
        self.rebalanced: dict[AppKey, dict[str, Any]] = {}
        """PinScalers whose HPA maxima were moved between clusters: ``status.rebalance``."""
        self.floor_totals: dict[AppKey, int] = {}
        """Apps an HPA scales whose replicas in lost clusters the survivors' floors hold:
        the replicas the app runs in all (its status counts against them)."""
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

    def connect(self, name: str, context: str) -> Connection:
        if name not in self.connections:
            self.connections[name] = Connection(name, context, self.kubeconfig)
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
        self._plan_all(found, self.rollouts)
        return found

    def run(self, result: Result) -> PassReport:
        """One pass. Never raises for a cluster's failure: it is in the report."""
        self.pass_wanted.set()
        with self.passing:
            self.pass_wanted.clear()
            try:
                return self._pass(result)
            finally:
                # the next pass reuses what it can prove the same (serve: all but a push's
                # changed apps); a one-shot reconciler's let go of the pass's objects
                self.digests = self.digests.carried() if self.watch else applied.Digests()

    def _pass(self, result: Result) -> PassReport:
        started = time.monotonic()
        report = PassReport(revision=result.revision)
        if not result.ok:
            report.error = f"{len(result.diagnostics)} error(s) in the specs: nothing applied"
            return report
        step = Steps(report.steps)
        collected = COLLECTOR.seconds
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
        if self.wait:
            with step("wait"):
                self._wait_healthy(found)
        with step("publish"):
            decided = publish.Decided(rollouts, moves, self.floor_totals, self.rebalanced,
                                      publish.revisions_of(host), placements(result))
            self._publish(found, stored, report, decided, host)
            self._store_cluster_states(stored, report)
        for member in found.values():
            report.clusters[member.name] = member.report or ClusterReport(
                member.name, error=member.error)
        report.seconds = time.monotonic() - started
        report.steps["gc"] = round(COLLECTOR.seconds - collected, 3)  # within the steps
        return report

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
                  rollouts: Mapping[AppKey, AppRollout]) -> None:
        """Plan every member; what the rollouts' gates hold there is never re-recorded."""
        gated = rollout_step.gated(rollouts, found)
        self._in_parallel(found, lambda m: self._plan(m, gated.get(m.name, ())))

    def _plan(self, member: MemberState, gated: Collection[Key] = ()) -> None:
        """Plan one member (``gated``: what a rollout gate holds there, never re-recorded)."""
        assert member.conn is not None
        member.plan = plan_cluster(member.conn, member.desired, member.live, self.options,
                                   member.initial_replicas, self._memo(member.name),
                                   self.digests, gated)
        self.progress.planned(member.name, len(member.desired), len(member.plan.pending))

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
        done = execute(member.conn, plan, workers=self.options.workers, echo=self.echo,
                       on_done=lambda _change: self.progress.applied(member.name))
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
            live = self._host_live(conn)
            wanted = host.desired_objects(result.catalog, report.revision,
                                          desired.app_digests(result.manifests,
                                                              self.digests))
            plan = plan_cluster(conn, wanted, live, self.options, memo=self._memo(HOST))
            if self.apps is not None:
                narrow.narrow(plan, self.apps, self.options.max_prune, host=True)
            done = execute(conn, plan)
            host_report = ClusterReport(HOST, unchanged=len(plan.of(Action.UNCHANGED)))
            host_report.created = [c.ref(HOST) for c in done[Action.CREATE]]
            host_report.updated = [c.ref(HOST) for c in done[Action.UPDATE]]
            host_report.pruned = [c.ref(HOST) for c in done[Action.PRUNE]]
            report.clusters[HOST] = host_report
            apps = {host.app_key(o): o for k, o in live.items() if k[0] != "Namespace"}
            for change in plan.pending:  # as the API server answered each write
                if change.key[0] == "Namespace":
                    continue
                if change.action is Action.PRUNE and change.live is not None:
                    apps.pop(host.app_key(change.live), None)
                elif change.predicted is not None:
                    apps[host.app_key(change.predicted)] = change.predicted
            return apps
        except CLUSTER_ERRORS as exc:
            report.clusters[HOST] = ClusterReport(HOST, error=explain(exc))
            self.echo(f"host: FAILED: {explain(exc)}")
            return {}

    def _host_live(self, conn: Connection) -> dict[Key, Obj]:
        """The host's CRDs ensured, then its spec resources and their namespaces: one LIST
        per kind, or (``watch``) the host's watch cache, which also holds the CRDs."""
        from reconciler import host

        watched = [host.CRD_KIND, *host.spec_kinds(), NAMESPACE]
        if not self.watch:
            host.ensure_crds(conn)
            return read.list_many(conn, watched[1:], lean=True)
        if self.host_cache is not None:
            live = self.host_cache.snapshot()
            crds = {k: o for k, o in live.items() if k[0] == host.CRD_KIND.kind}
            if host.ensure_crds(conn, existing=crds):  # another version's CRDs: watch anew
                self.host_cache.close()
                self.host_cache = None
        if self.host_cache is None:
            host.ensure_crds(conn)
            self.host_cache = ClusterCache(conn, watched=watched)
        return {k: o for k, o in self.host_cache.snapshot().items()
                if k[0] != host.CRD_KIND.kind}

    def _host_ok(self, report: PassReport) -> Connection | None:
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

    def _wait_healthy(self, members: dict[str, MemberState]) -> None:
        """Wait (bounded by ``timeout``) until what this pass wrote is healthy."""
        deadline = time.monotonic() + self.timeout

        def one(member: MemberState) -> None:
            assert member.conn is not None and member.plan is not None
            # a restamp that moved the generation (a Deployment's annotations count) is
            # waited for like a write: its controller has a generation to observe
            written = member.plan.pending + [c for c in member.plan.restamps
                                             if _generation_moved(c)]
            waiting = [c.desired for c in written
                       if c.action is not Action.PRUNE and c.desired is not None
                       and c.desired["kind"] not in UNWAITED_KINDS]
            total = len(waiting)
            while waiting and time.monotonic() < deadline:
                still = []
                for obj in waiting:
                    live = read.get(member.conn, obj)
                    if live is not None:
                        member.live[key_of(obj)] = live
                    if live is None or assess(live).phase is Phase.PROGRESSING:
                        still.append(obj)
                waiting = still
                self.progress.health(member.name, total - len(waiting), total)
                if waiting:
                    time.sleep(1.0)

        self._in_parallel(members, one)

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
        host_conn = self._host_ok(report)
        if host_conn is None:
            return
        report.statuses = dict(self.statuses)  # the follower rewrites self.statuses
        error = publish.write(host_conn, self.statuses, stored, found, report.revision,
                              decided.moves)
        if error is not None:
            report.clusters[HOST].error = error


def _generation_moved(change: Change) -> bool:
    """Whether writing ``change`` gave its object a new ``metadata.generation``."""
    def generation(obj: Obj | None) -> Any:
        return ((obj or {}).get("metadata") or {}).get("generation")

    return change.live is not None and generation(change.predicted) != generation(change.live)
