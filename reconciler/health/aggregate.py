"""One health for many objects (an app across its clusters): the worst wins.

:data:`ORDER`, best to worst, and why:

- ``Healthy < Completed``: a run-to-completion workload that finished did what it was
  asked; next to a running part it is the finished part that says more.
- ``Completed < Suspended``: one paused or suspended part makes the app Suspended, as in
  Argo CD; it is deliberate, not a fault.
- ``Suspended < Progressing < Missing``: work under way is worse than work held; an object
  that does not exist yet (Missing) is further from done than one converging.
- ``Missing < Unknown``: a cluster we cannot read might hold anything, so it outranks the
  not-yet-done states, as in Argo CD.
- ``Unknown < Degraded < Failed``: unlike Argo CD (which ranks Unknown worst) a fault we
  *know* of outranks one we cannot see: when one cluster is unreachable and another runs a
  crash-looping Deployment, the app is Degraded whatever the unreachable cluster holds,
  and saying Unknown would hide the actionable reason. Failed (a terminal outcome, e.g. a
  Job out of retries) is worse than Degraded (which may still recover by itself).
"""

from __future__ import annotations

from collections.abc import Iterable

from reconciler.model import Health, ObjectRef, Phase

ORDER: tuple[Phase, ...] = (
    Phase.HEALTHY, Phase.COMPLETED, Phase.SUSPENDED, Phase.PROGRESSING, Phase.MISSING,
    Phase.UNKNOWN, Phase.DEGRADED, Phase.FAILED,
)
"""Every phase, best first."""

Ref = ObjectRef | str
Item = Health | None | tuple[Ref, Health | None]
"""What :func:`aggregate` takes: a health, None (no opinion: Healthy), or a (where, health)
pair whose ``where`` prefixes the message."""


def rank(phase: Phase) -> int:
    """Position of ``phase`` in :data:`ORDER` (0 is Healthy; higher is worse)."""
    return ORDER.index(phase)


def where(ref: Ref) -> str:
    """``Deployment/search/search-api in use1a-general-01`` for an ObjectRef."""
    if isinstance(ref, ObjectRef):
        return f"{ref} in {ref.cluster}" if ref.cluster else str(ref)
    return ref


def aggregate(items: Iterable[Item]) -> Health:
    """The worst of ``items`` by :data:`ORDER` (the first of equals, in iteration order),
    with its message prefixed by where it is when given as a (ref, health) pair.

    No items, or only healthy ones, give a plain Healthy.
    """
    worst: Health | None = None
    worst_ref: Ref | None = None
    for item in items:
        ref, health = item if isinstance(item, tuple) else (None, item)
        health = health or Health(Phase.HEALTHY)
        if worst is None or rank(health.phase) > rank(worst.phase):
            worst, worst_ref = health, ref
    if worst is None or worst.phase is Phase.HEALTHY:
        return Health(Phase.HEALTHY)
    if worst_ref is None:
        return worst
    place = where(worst_ref)
    return Health(worst.phase, f"{place}: {worst.message}" if worst.message else place)


def summary(health: Health) -> str:
    """One line for a user: ``Degraded: Deployment/search/search-api in c1: <reason>``."""
    return f"{health.phase}: {health.message}" if health.message else str(health.phase)
