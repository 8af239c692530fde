"""Waiting for what a pass wrote to turn healthy: a step its caller repeats, the way
gitops-engine's ``Sync()`` answers "running" and is called again, not a loop inside the
pass. :func:`waited_for` names what a member's pass wrote that is worth waiting for,
:func:`check` reads those objects once and keeps the ones still progressing, and
:func:`settle` repeats a check on a clock until nothing is left or the time is up."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from reconciler.clients import read
from reconciler.clients.access import ClusterAccess
from reconciler.clients.read import Key, key_of
from reconciler.clock import SYSTEM_CLOCK, Clock
from reconciler.health.rules import assess
from reconciler.model import Obj, Phase
from reconciler.plan.change import Action, Change
from reconciler.plan.cluster_plan import ClusterPlan

#: Run-to-completion kinds: a pass waits for them to start, not to finish.
UNWAITED_KINDS = ("Job", "CronJob", "TFJob", "PyTorchJob")
#: seconds between two checks
INTERVAL = 1.0


@dataclass
class Waiting:
    """Per member cluster: what its pass wrote and has not seen healthy yet."""

    objects: dict[str, list[Obj]] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)
    """How many objects each member waited for at first."""

    @property
    def progressing(self) -> bool:
        return any(self.objects.values())

    def healthy(self, cluster: str) -> int:
        """How many of ``cluster``'s objects have turned healthy."""
        return self.totals.get(cluster, 0) - len(self.objects.get(cluster, ()))


def waited_for(plan: ClusterPlan) -> list[Obj]:
    """The desired objects a pass wrote with ``plan`` that it waits to see healthy: every
    write but prunes and run-to-completion kinds, and every restamp that gave its object
    a new generation (a Deployment's annotations count: its controller has a generation
    to observe)."""
    written = plan.pending + [c for c in plan.restamps if _generation_moved(c)]
    return [c.desired for c in written
            if c.action is not Action.PRUNE and c.desired is not None
            and c.desired["kind"] not in UNWAITED_KINDS]


def check(conn: ClusterAccess, objects: list[Obj], live: dict[Key, Obj],
          cached: dict[Key, Obj] | None = None) -> list[Obj]:
    """Read ``objects`` once (from ``cached``, a watch cache's objects, when given; else
    with as few requests as :func:`reconciler.clients.read.current` needs); what is read
    goes into ``live``; those still absent or progressing."""
    now = read.current(conn, objects, cached)
    still = []
    for obj in objects:
        found = now[key_of(obj)]
        if found is not None:
            live[key_of(obj)] = found
        if found is None or assess(found).phase is Phase.PROGRESSING:
            still.append(obj)
    return still


def settle(waiting: Waiting, check_all: Callable[[], None], timeout: float,
           clock: Clock = SYSTEM_CLOCK, interval: float = INTERVAL) -> float:
    """Call ``check_all`` (which shortens ``waiting``) every ``interval`` seconds of
    ``clock`` until nothing is progressing or ``timeout`` seconds have passed; the seconds
    it took."""
    started = clock.monotonic()
    deadline = started + timeout
    while waiting.progressing and clock.monotonic() < deadline:
        check_all()
        if waiting.progressing:
            clock.sleep(interval)
    return clock.monotonic() - started


def _generation_moved(change: Change) -> bool:
    """Whether writing ``change`` gave its object a new ``metadata.generation``."""
    def generation(obj: Obj | None) -> object:
        return ((obj or {}).get("metadata") or {}).get("generation")

    return change.live is not None and generation(change.predicted) != generation(change.live)
