"""Per cluster: plan (create / update / replace / prune / conflict) through server-side
dry-run applies; :mod:`reconciler.plan.execute` carries the plan out.

Rules, each in one place below:

* an object the live state lacks is a create, without a dry-run (it could not change the
  decision): :mod:`~reconciler.plan.execute` creates it only if its name is still free,
  and a name another object holds is planned again against that object
  (:attr:`ClusterPlan.taken`); a plan that is only shown (``preview``: ``pincompile plan``)
  dry-runs creates too, to show a held name or a rejection before anything is written;
* never touch an object without our managed-by label, unless ``adopt``;
* a dry-run that answers "field is immutable" (or a Pod's "may not change fields") makes
  the object a *replace*: delete, wait until it is gone, create;
* prune only objects we manage that are no longer desired, never Namespaces or PVCs
  without ``prune_data``, never more than ``max_prune`` of the cluster's managed objects;
* an autoscaled workload's ``spec.replicas`` belongs to its HPA: it is set once, at
  creation, handed to a field manager of its own before the first apply that leaves it
  out (:mod:`~reconciler.plan.execute`), and is never part of what ``pincompile`` applies
  after that.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from kubernetes.dynamic.exceptions import DynamicApiError

from pincompile.manifest import ANNOTATION_FAILOVER, MANAGED_BY, MANAGED_BY_VALUE
from reconciler import kinds
from reconciler.clients import pace, read, write
from reconciler.clients.access import ClusterAccess
from reconciler.clients.read import Key, key_of
from reconciler.model import Obj
from reconciler.plan import applied, conflict, diff
from reconciler.plan.change import Action, Change
from reconciler.plan.memo import PlanMemo


@dataclass
class Options:
    """How a pass may act on a cluster."""

    adopt: bool = False
    prune: bool = True
    prune_data: bool = False
    max_prune: str = "20%"
    """An absolute count (``5``) or a share of the cluster's managed objects (``20%``)."""
    workers: int | None = None
    """Requests at once per cluster (default: its pace, :mod:`reconciler.clients.pace`)."""


@dataclass
class ClusterPlan:
    """Every change one cluster needs, in apply order."""

    cluster: str
    changes: list[Change] = field(default_factory=list)
    live: dict[Key, Obj] = field(default_factory=dict)
    blocked: str | None = None
    """Why nothing will be pruned in this cluster (a prune over ``max_prune``)."""
    gated: frozenset[Key] = frozenset()
    """Objects a rollout gate holds on their live template (a later zone waiting): never
    re-recorded. Their desired is the live template, not the app's: its record changes
    with whoever writes the template (a restart's annotation), and the write would take
    a share of those managers' fields and move the Deployment's generation (its
    annotations count), so the held zone looks progressing while it must stay put."""
    taken: Callable[[Key, Obj], Change] | None = None
    """What a planned create needs once its create found the name held (the holder as
    the API server answers it): planned again against that object — a conflict, an
    adoption, or (an object of ours the live state missed) an update."""

    def of(self, *actions: Action) -> list[Change]:
        return [c for c in self.changes if c.action in actions]

    @property
    def pending(self) -> list[Change]:
        """Changes that write."""
        return self.of(Action.CREATE, Action.UPDATE, Action.REPLACE, Action.PRUNE)

    @property
    def restamps(self) -> list[Change]:
        """Unchanged objects applied only to record them (see :attr:`Change.restamp`),
        but for those a rollout gate holds (:attr:`gated`)."""
        return [c for c in self.changes if c.restamp and c.action is Action.UNCHANGED
                and c.key not in self.gated]


def is_managed(obj: Obj | None) -> bool:
    labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
    return bool(labels.get(MANAGED_BY) == MANAGED_BY_VALUE)


def autoscaled(desired: Iterable[Obj]) -> set[Key]:
    """Workloads an HPA in ``desired`` scales."""
    out: set[Key] = set()
    for obj in desired:
        if obj["kind"] == "HorizontalPodAutoscaler":
            target = obj["spec"]["scaleTargetRef"]
            out.add((target["kind"], obj["metadata"].get("namespace") or "", target["name"]))
    return out


def read_live(conn: ClusterAccess) -> dict[Key, Obj]:
    """Everything pincompile manages in the cluster: one LIST per served kind, the LISTs
    in parallel (one after the other, a pass waits for the sum of their times); lean (no
    managedFields: :mod:`~reconciler.plan.execute` GETs them where it needs them)."""
    return read.list_many(conn, [k for k in kinds.MANAGED_KINDS if read.served(conn, k)],
                          lean=True)


def plan_cluster(conn: ClusterAccess, desired: list[Obj], live: dict[Key, Obj],
                 options: Options, initial_replicas: dict[Key, int] | None = None,
                 memo: PlanMemo | None = None,
                 digests: applied.Digests | None = None,
                 gated: Collection[Key] = (), *, preview: bool = False) -> ClusterPlan:
    """Compare desired with live through dry-run applies; nothing is written.

    ``initial_replicas``: the replicas a new autoscaled workload starts with (its cluster's
    share of the app's replicas). ``memo``: skip the dry-run of objects found unchanged
    before whose desired content and live ``resourceVersion`` are the same again.
    ``digests``: the pass's digests of desired objects, to reuse. ``gated``: objects a
    rollout gate holds (:attr:`ClusterPlan.gated`). ``preview``: the plan is only shown,
    so an object the live state lacks is dry-run too."""
    scaled = autoscaled(desired)
    plan = ClusterPlan(conn.name, live=live, gated=frozenset(gated))
    creating_namespaces = {d["metadata"]["name"] for d in desired
                           if d["kind"] == "Namespace" and key_of(d) not in live}
    by_key = {key_of(d): d for d in desired}

    def taken(key: Key, holder: Obj) -> Change:
        # an object of ours is planned as the live object it is; any other holder as an
        # unseen name, through the dry-run that tells a conflict from an adoption
        seen = {key: holder} if is_managed(holder) else {}
        return _given(_plan_object(conn, by_key[key], seen, options, scaled, set(),
                                   initial_replicas or {}, digests=digests, preview=True))

    plan.taken = taken

    def one(obj: Obj, *, local: bool = False) -> Change | None:
        inputs = None
        if memo is not None and digests is not None:
            key = key_of(obj)
            inputs = (digests.of(obj), key in scaled)
            reused = memo.reused(key, inputs, live.get(key))
            if reused is not None:
                return reused
        change = _plan_object(conn, obj, live, options, scaled, creating_namespaces,
                              initial_replicas or {}, memo, digests, local=local,
                              preview=preview)
        if memo is not None and change is not None:
            memo.record(change, inputs)
        return change

    ordered = sorted(desired, key=lambda o: (kinds.order(o["kind"]), key_of(o)))
    # what is decided without a request, here; only the dry-runs in threads (a thread's
    # hand-off per object cost more than the check itself, for thousands of objects)
    decided = [one(obj, local=True) for obj in ordered]
    asking = [o for o, c in zip(ordered, decided, strict=True) if c is None]
    with ThreadPoolExecutor(max_workers=pace.threads(conn, len(asking),
                                                     options.workers)) as pool:
        asked = iter(pool.map(one, asking))
        plan.changes = [c if c is not None else _given(next(asked)) for c in decided]
    desired_keys = {key_of(d) for d in desired}
    if memo is not None:
        memo.keep_only(desired_keys)
    # what is already being deleted, or is in a namespace being deleted, is on its way out
    going = {k for k, obj in live.items() if (obj.get("metadata") or {}).get("deletionTimestamp")}
    going_namespaces = {name for kind, _, name in going if kind == "Namespace"}
    prunable = [Change(Action.PRUNE, k, live=obj) for k, obj in live.items()
                if k not in desired_keys and k not in going and k[1] not in going_namespaces]
    kept = [c for c in prunable if (info := kinds.info(c.key[0])) and info.data
            and not options.prune_data]
    for change in kept:
        change.action, change.reason = Action.SKIPPED, "holds data: prune with --prune-data"
    prunes = [c for c in prunable if c.action is Action.PRUNE]
    limit = prune_limit(options.max_prune, len(live))
    if not options.prune:
        for change in prunes:
            change.action, change.reason = Action.SKIPPED, "pruning is off"
    elif len(prunes) > limit:
        plan.blocked = (f"{len(prunes)} of {len(live)} managed objects would be pruned, "
                        f"over --max-prune {options.max_prune} ({limit}); nothing pruned")
        for change in prunes:
            change.action, change.reason = Action.SKIPPED, plan.blocked
    prunable.sort(key=lambda c: (-kinds.order(c.key[0]), c.key))
    plan.changes += prunable
    return plan


def prune_limit(max_prune: str, managed: int) -> int:
    """How many objects a pass may prune out of ``managed``."""
    text = str(max_prune).strip()
    if text.endswith("%"):
        return int(managed * float(text[:-1]) / 100)
    return int(text)


def _plan_object(conn: ClusterAccess, obj: Obj, live: dict[Key, Obj], options: Options,
                 scaled: set[Key], creating_namespaces: set[str],
                 initial_replicas: dict[Key, int], memo: PlanMemo | None = None,
                 digests: applied.Digests | None = None, *, local: bool = False,
                 preview: bool = False) -> Change | None:
    """What one object needs (``local``: only if that is known without a request; else
    None; ``preview``: see :func:`plan_cluster`)."""
    key = key_of(obj)
    current = live.get(key)
    to_apply = obj  # never changed in place below: a copy where it differs
    if key in scaled:
        spec = dict(obj["spec"])
        if current is None and key in initial_replicas:
            spec["replicas"] = initial_replicas[key]
        elif current is not None:
            spec.pop("replicas", None)
        to_apply = {**obj, "spec": spec}
    # the record leaves out replicas an HPA owns: the same whether set (at creation) or not
    to_apply = applied.stamp(to_apply, _without_replicas(to_apply) if key in scaled else None,
                             digests)
    if current is not None and _failed_pod_to_recreate(current):
        return Change(Action.REPLACE, key, desired=to_apply, live=current, predicted=to_apply,
                      reason="the pod failed and asks for failover")
    # the memo first: two strings compared, where the record's check walks every value
    if current is not None and ((memo is not None and memo.still_unchanged(
            key, to_apply, current)) or applied.unchanged(to_apply, current)):
        return Change(Action.UNCHANGED, key, desired=to_apply, live=current, predicted=current)
    if current is None and not preview:
        return Change(Action.CREATE, key, desired=to_apply, predicted=to_apply)
    if local:
        return None
    try:
        predicted = write.apply(conn, to_apply, dry_run=True)
    except DynamicApiError as exc:
        message = rejection(exc)
        if current is not None and exc.status == 422 and conflict.is_immutable(message):
            return Change(Action.REPLACE, key, desired=to_apply, live=current,
                          predicted=to_apply, reason=message)
        if (current is None and exc.status == 404
                and obj["metadata"].get("namespace") in creating_namespaces):
            return Change(Action.CREATE, key, desired=to_apply, predicted=to_apply)
        holder = read.get(conn, obj) if current is None else None
        if holder is not None:  # refused because of the object holding the name
            return _name_taken(key, to_apply, holder, options, message)
        return Change(Action.INVALID, key, desired=to_apply, live=current, reason=message)
    if current is None:
        if not (predicted.get("metadata") or {}).get("resourceVersion"):
            return Change(Action.CREATE, key, desired=to_apply, predicted=predicted)
        # a dry-run create has no resourceVersion: this name is taken by an object we
        # do not manage (no LIST filtered by our label returned it)
        current = read.get(conn, obj)
        if not options.adopt:
            return _name_taken(key, to_apply, current, options, None)
    compared: tuple[Obj | None, Obj | None] = (current, predicted)
    if key in scaled:  # an HPA may scale between our LIST and the dry-run: not drift
        compared = (_without_replicas(current), _without_replicas(predicted))
    if diff.same(*compared):
        return Change(Action.UNCHANGED, key, desired=to_apply, live=current, predicted=predicted,
                      restamp=current is not None
                      and applied.stale(to_apply, current, predicted))
    return Change(Action.UPDATE, key, desired=to_apply, live=current, predicted=predicted,
                  reason="" if is_managed(current) else "adopted")


def _given(change: Change | None) -> Change:
    """A change planned with its requests (never None)."""
    assert change is not None
    return change


def _name_taken(key: Key, desired: Obj, holder: Obj | None, options: Options,
          rejection: str | None) -> Change:
    """A desired name held by an object we do not manage: a conflict; with ``adopt`` and an
    immutable field in the way, a replace (delete theirs, create ours)."""
    if options.adopt and rejection is not None and conflict.is_immutable(rejection):
        fields = ", ".join(conflict.immutable_fields(rejection)) or "an immutable field"
        return Change(Action.REPLACE, key, desired=desired, live=holder, predicted=desired,
                      reason=f"adopted: {fields} cannot change in place, so the object is "
                             "deleted and recreated")
    return Change(Action.CONFLICT, key, desired=desired, live=holder,
                  reason=conflict.describe(holder, rejection, adopting=options.adopt))


def _without_replicas(obj: Obj | None) -> Obj | None:
    """An autoscaled workload without ``spec.replicas`` (its HPA's, never ours)."""
    if obj is None:
        return None
    return {**obj, "spec": {k: v for k, v in (obj.get("spec") or {}).items()
                            if k != "replicas"}}


def _failed_pod_to_recreate(live: Obj) -> bool:
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    phase = (live.get("status") or {}).get("phase")
    return (live.get("kind") == "Pod" and phase == "Failed"
            and annotations.get(ANNOTATION_FAILOVER) == "true")


def rejection(exc: DynamicApiError) -> str:
    """The API server's message of a refused request (its ``Status``)."""
    body: Any = getattr(exc, "body", None)
    try:
        return str(json.loads(body)["message"])
    except (TypeError, ValueError, KeyError):
        return str(getattr(exc, "summary", lambda: exc)())
