"""The reconcile worker of ``serve``: one pass at a time, for the shards this process leads.

A pass fetches the branch head, compiles it (nothing is applied when the compile fails),
hands the result to a :class:`~reconciler.serve.runner.PassRunner` scoped to this process's
member clusters, repeats its health checks on the process's clock until what it wrote is
healthy (or ``health_timeout`` has passed), and records the outcome in the metrics, the
audit sinks and the status document that ``/status`` serves.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pincompile.contract import GitError
from reconciler.clock import SYSTEM_CLOCK, Clock
from reconciler.model import PassReport
from reconciler.serve.audit import AuditSink, record_for
from reconciler.serve.coalesce import Coalescer, Trigger
from reconciler.serve.documents import report_json
from reconciler.serve.metrics import Metrics
from reconciler.serve.mirror import Mirror
from reconciler.serve.runner import PassRunner, RunnerFactory
from reconciler.serve.shards import assign
from reconciler.step_timings import Steps, steps_line

log = logging.getLogger("pincompile.serve")


@dataclass
class ServiceState:
    """What ``/status`` and ``/readyz`` read (written by the worker and the Lease thread)."""

    last_pass: dict[str, Any] | None = None
    last_applied: dict[str, Any] | None = None
    applied_ok: bool = False
    busy_since: float | None = None
    stage: str | None = None
    """What the pass in flight is doing: fetch, compile or reconcile."""
    overdue: bool = False
    """The pass in flight has run past the pass deadline (reported once)."""
    leading: frozenset[int] = field(default_factory=frozenset)
    campaigned: bool = False


class Service:
    """Runs passes when triggered, while this process leads at least one shard."""

    def __init__(self, mirror: Mirror, runners: RunnerFactory, metrics: Metrics,
                 audits: Sequence[AuditSink] = (), *, coalescer: Coalescer | None = None,
                 shards: int = 1, resync: float = 180.0, identity: str = "serve",
                 pass_deadline: float = 300.0, stuck_after: float = 0.0,
                 health_timeout: float = 300.0, clock: Clock = SYSTEM_CLOCK) -> None:
        self.mirror = mirror
        self.runners = runners
        self.metrics = metrics
        self.audits = list(audits)
        self.coalescer = coalescer or Coalescer(clock=clock)
        self.shards = shards
        self.resync = resync
        self.identity = identity
        self.pass_deadline = pass_deadline
        self.stuck_after = stuck_after
        """A pass running this long is given up (``on_stuck``); 0: never."""
        self.health_timeout = health_timeout
        """How long a pass waits for what it wrote to turn healthy before its statuses."""
        self.on_stuck: Callable[[str], None] | None = None
        self.clock = clock
        """The process's clock: the resync timer, the pass deadline, the health wait, the
        runners' failover grace and every reported instant (``clock()``: epoch seconds)."""
        self.state = ServiceState(leading=frozenset(range(shards)))
        self._lock = threading.Lock()
        self._runner: tuple[frozenset[str] | None, PassRunner] | None = None
        self.stopping = threading.Event()
        self.pass_lock = threading.Lock()
        self.relay: Callable[[str], list[str]] | None = None
        """Set under leader election: passes a push on to the other shards' leaders."""
        self.pass_observers: list[Callable[[PassReport, float | None], object]] = []
        """Given each finished pass and its push → applied seconds (None: not a push's)."""
        self.on_published: Callable[[PassReport, str], object] | None = None
        """Given each pass that published app statuses and the webhook delivery that
        triggered it ("" for none): the insight store records them."""
        self.metrics.set_leading(shards, self.state.leading)

    # -- leadership -----------------------------------------------------------------------
    def set_leading_shards(self, leading: frozenset[int]) -> None:
        """The shards this process leads now; a newly won shard gets a pass at once."""
        with self._lock:
            gained = leading - self.state.leading
            self.state.leading = leading
            self.state.campaigned = True
        self.metrics.set_leading(self.shards, leading)
        log.info("leading shards %s", sorted(leading) or "none (standby)")
        if gained:
            self.coalescer.offer(Trigger("leader", received=self.clock()))

    def pushed(self, revision: str, delivery: str = "") -> None:
        """A push webhook arrived here: queue a pass, and relay it to other shards' leaders."""
        self.coalescer.offer(Trigger("push", revision, received=self.clock(),
                                     delivery=delivery))
        if self.relay is not None and len(self.state.leading) < self.shards:
            relayed = self.relay(revision)
            if relayed:
                log.info("relayed %s to the leaders of %s", revision[:12], ", ".join(relayed))

    def relayed(self, revision: str) -> None:
        """Another replica received a push for a shard this process leads."""
        self.coalescer.offer(Trigger("push", revision, received=self.clock()))

    def ready(self) -> tuple[bool, str]:
        """Leaders: after their first successful pass, unless the pass in flight has run past
        the pass deadline. Standbys: once the Lease was read."""
        state = self.state
        overdue = self.overdue()
        if overdue is not None:
            return False, overdue
        if state.leading:
            if state.applied_ok:
                return True, "a pass succeeded"
            return False, "leading, waiting for the first successful pass"
        if state.campaigned:
            return True, "standby: another replica leads"
        return False, "has not reached the host cluster yet"

    def running_for(self) -> float | None:
        """How long the pass in flight has run (None: no pass is running)."""
        since = self.state.busy_since
        return None if since is None else max(0.0, self.clock() - since)

    def overdue(self, running: float | None = None) -> str | None:
        """Why the pass in flight is overdue (None when it is not); ``running``: how long
        it has run, if just read."""
        running = self.running_for() if running is None else running
        if running is None or running <= self.pass_deadline:
            return None
        return (f"the pass in flight ({self.state.stage or 'starting'}) has run {running:.0f}s, "
                f"past the pass deadline of {self.pass_deadline:g}s (--pass-deadline); "
                "pushes are queued and taken when it ends")

    def watch_deadline(self) -> None:
        """Until :meth:`stop`: log once per pass when it runs past the pass deadline (the
        worker itself cannot: it is the one stuck)."""
        step = max(0.1, min(1.0, self.pass_deadline / 4))
        while not self.clock.wait_event(self.stopping, step):
            running = self.running_for()
            reason = self.overdue(running)
            if reason is not None and not self.state.overdue:
                self.state.overdue = True
                log.warning("%s", reason)
            if self.stuck_after and running is not None and running > self.stuck_after \
                    and self.on_stuck is not None:
                self.on_stuck(f"the pass in flight ({self.state.stage or 'starting'}) has run "
                              f"{running:.0f}s, past --stuck-after {self.stuck_after:g}s")
                return

    # -- the worker -----------------------------------------------------------------------
    def run(self) -> None:
        """Take triggers until :meth:`stop`; resync after ``resync`` quiet seconds."""
        threading.Thread(target=self.watch_deadline, name="pass-deadline", daemon=True).start()
        self.coalescer.offer(Trigger("start", received=self.clock()))
        next_resync = self.clock.monotonic() + self.resync
        while not self.stopping.is_set():
            trigger = self.coalescer.take(
                timeout=max(0.0, next_resync - self.clock.monotonic()))
            if self.stopping.is_set():
                break
            if trigger is None:
                trigger = Trigger("resync", received=self.clock())
            with self.pass_lock:  # leadership changes wait for the pass to finish
                if self.state.leading and not self.nothing_missed(trigger):
                    self.pass_once(trigger)
            next_resync = self.clock.monotonic() + self.resync

    def nothing_missed(self, trigger: Trigger) -> bool:
        """Whether a ``head`` trigger finds the branch head still at the revision the last
        pass applied: then no push was missed, and a pass would only repeat that one."""
        if trigger.reason != "head" or self.state.last_applied is None:
            return False
        try:
            sha = self.mirror.fetch()
        except GitError:
            return False  # the pass says why
        if sha != self.state.last_applied["revision"]:
            return False
        log.info("the branch head is still %s, applied by the overdue pass: no push was "
                 "missed", sha[:12])
        return True

    def stop(self) -> None:
        self.stopping.set()
        self.coalescer.close()

    def close(self) -> None:
        if self._runner is not None:
            self._runner[1].close()
            self._runner = None

    def _runner_for(self, scope: frozenset[str] | None) -> PassRunner:
        if self._runner is None or self._runner[0] != scope:
            self.close()
            self._runner = (scope, self.runners(scope, self.clock))
        return self._runner[1]

    def scope(self, clusters: Sequence[str], leading: frozenset[int]) -> frozenset[str] | None:
        """The member clusters this process reconciles (``None``: all, unsharded)."""
        if self.shards == 1:
            return None
        shard_clusters = assign(clusters, self.shards)
        return frozenset().union(*(shard_clusters[s] for s in leading))

    def probed(self, clusters: Sequence[str]) -> frozenset[str] | None:
        """Of ``clusters``, those this process reconciles now (None: it leads no shard)."""
        leading = self.state.leading
        if not leading:
            return None
        scope = self.scope(clusters, leading)
        return frozenset(clusters) if scope is None else scope & frozenset(clusters)

    def pass_once(self, trigger: Trigger) -> PassReport:
        """Fetch, compile and reconcile the branch head once; record the outcome."""
        start = self.clock.monotonic()
        leading = self.state.leading
        self.state.stage = "fetch"
        self.state.busy_since = self.clock()
        step = Steps({"queued": round(max(0.0, self.state.busy_since - trigger.received), 3)})
        author = subject = ""
        diagnostics: list[str] = []
        stage: str | None = "fetch"
        sha = "unknown"
        try:
            with step("fetch"):
                sha = self.mirror.fetch()
            stage = self.state.stage = "compile"
            with step("compile"):
                commit = self.mirror.commit(sha)
                author, subject = commit.author, commit.subject
                result = self.mirror.compile(sha)
            if not result.ok:
                diagnostics = [f"{d.file}:{d.line}:{d.column}: {d.code}: {d.message}"
                               for d in result.diagnostics]
                n = len(diagnostics)
                raise GitError(f"compile failed with {n} error{'s' if n != 1 else ''}; "
                               f"first: {diagnostics[0]}")
            stage = None
            self.state.stage = "reconcile"
            scope = self.scope(sorted(result.catalog.clusters), leading)
            runner = self._runner_for(scope)
            with runner.pass_of(result) as flight:
                runner.settle(flight, self.health_timeout, self.clock)
            report = flight.report
        except GitError as exc:
            report = PassReport(revision=sha, error=str(exc))
        except Exception as exc:  # a bug in the engine must not end the worker
            log.exception("the reconciler failed")
            stage = "reconcile"
            report = PassReport(revision=sha, error=f"internal error: {type(exc).__name__}: {exc}")
        report.seconds = self.clock.monotonic() - start
        report.steps = {**step.seconds, **report.steps}
        self._finish(report, trigger, stage, author, subject, diagnostics, leading)
        return report

    def _finish(self, report: PassReport, trigger: Trigger, stage: str | None, author: str,
                subject: str, diagnostics: list[str], leading: frozenset[int]) -> None:
        if report.statuses and self.on_published is not None:
            pushed = trigger.reason == "push" and trigger.revision == report.revision
            self.on_published(report, trigger.delivery if pushed else "")
        previous = self.state.last_applied
        drift = previous is not None and previous["revision"] == report.revision
        self.metrics.observe_pass(report, stage=stage, drift=drift)
        latency = None
        if report.ok and trigger.reason == "push" and trigger.revision == report.revision:
            latency = self.clock() - trigger.received
            self.metrics.push_to_applied.observe(latency)
        for observe in self.pass_observers:
            observe(report, latency)
        record = record_for(report, author=author, subject=subject, trigger=trigger.reason,
                            stage=stage, shards=sorted(leading))
        for sink in self.audits:
            sink.write(record)
        document = {**report_json(report), "outcome": record.outcome, "trigger": trigger.reason,
                    "coalesced": trigger.merged, "author": author, "subject": subject,
                    "finished": record.time, "shards": sorted(leading),
                    "push_to_applied_seconds": latency}
        if diagnostics:
            document["diagnostics"] = diagnostics
        if self.state.overdue:  # pushes may have missed this replica while it was not ready
            log.warning("the overdue pass ended after %.0fs; taking the branch head again",
                        report.seconds)
            # a pass that applied only if the head moved; a failed one is tried again
            self.coalescer.offer(Trigger("head" if report.ok else "resync",
                                         received=self.clock()))
        with self._lock:
            self.state.last_pass = document
            self.state.busy_since = None
            self.state.stage = None
            self.state.overdue = False
            if report.ok:
                self.state.applied_ok = True
                self.state.last_applied = {"revision": report.revision, "time": self.clock(),
                                           "finished": record.time}
        log.info("%s", record.summary())
        log.info("pass %s steps (s): %s", report.revision[:12], steps_line(report.steps))

