"""Carry a cluster's plan out: applies in dependency order, replaces, re-records, prunes;
an autoscaled workload's replicas handed to a manager of their own.

A create is a server-side apply that only a free name accepts (:func:`write.create`). A
name found held is planned again against its holder (:attr:`ClusterPlan.taken`); a
create the API server refuses is left as a dry-run's refusal would have left it
(:attr:`Action.INVALID`, with the server's message), and nothing after it in its app's
order is written in that cluster (a refused Namespace: nothing in it)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from itertools import groupby

from kubernetes.dynamic.exceptions import ConflictError, DynamicApiError

from reconciler import kinds
from reconciler.clients import pace, read, write
from reconciler.clients.access import FIELD_MANAGER, ClusterAccess
from reconciler.clients.connect import RETRY_STATUSES
from reconciler.model import Obj
from reconciler.plan.change import Action, Change
from reconciler.plan.cluster_plan import ClusterPlan, autoscaled, rejection
from reconciler.status.document import app_of

INITIAL_REPLICAS_MANAGER = "pincompile-initial-replicas"


def execute(conn: ClusterAccess, plan: ClusterPlan, *, workers: int | None = None,
            echo: Callable[[str], None] = lambda _m: None,
            on_done: Callable[[Change], None] = lambda _c: None) -> dict[Action, list[Change]]:
    """Carry out a plan: applies in dependency order (objects of one kind in parallel, a
    kind only once the kinds before it are done), replaces, then prunes in reverse order.
    Returns what was done, by action; ``on_done`` is told of each change once written. A
    create that turned into something else (see the module) is left in ``plan`` as such.
    ``workers``: writes at once (default: the cluster's pace, :mod:`~reconciler.clients.pace`)."""
    scaled = autoscaled(c.desired for c in plan.changes if c.desired is not None)
    refused: list[Change] = []

    def one(change: Change, held: frozenset[tuple[str, ...]] = frozenset()) -> Change | None:
        if held and not held.isdisjoint(_held_by(change)):
            change.action = Action.SKIPPED
            change.reason = "not written: an object before it in its app's order was refused"
            return None
        if change.action is Action.UNCHANGED:  # a restamp: only those are handed here
            if not _restamp(conn, change, change.key in scaled):
                change.restamp = False  # not written: no longer among the plan's restamps
                echo(f"{plan.cluster}: not recorded {change.name}: changed since it was "
                     "planned (the next pass looks at it again)")
                return None
        elif change.action is Action.CREATE:
            if not _create(conn, plan, change, change.key in scaled):
                if change.action is Action.INVALID:
                    refused.append(change)
                # planned again against the object holding its name: that change, if any
                # (a create again would only find the name held again)
                return one(change) if change.action in WRITES - {Action.CREATE} else None
        elif change.action is Action.UPDATE:
            assert change.desired is not None
            if change.key in scaled:
                _hand_over_if_sole_owner(conn, change)
            change.predicted = write.apply(conn, change.desired)
        elif change.action is Action.REPLACE:
            assert change.desired is not None and change.live is not None
            uid = change.live["metadata"].get("uid")
            echo(f"{plan.cluster}: recreating {change.name} (delete, then create): "
                 f"{_first_line(change.reason)}")
            write.delete(conn, change.live, propagation="Foreground")
            if not write.wait_gone(conn, change.live, uid=uid):
                raise TimeoutError(f"{change.name}: the old object did not go away in time")
            change.predicted = write.apply(conn, change.desired)
        elif change.action is Action.PRUNE:
            assert change.live is not None
            write.delete(conn, change.live)
        else:
            return None
        echo(f"{plan.cluster}: {'recorded' if change.restamp else change.action} {change.name}")
        on_done(change)
        return change

    done: dict[Action, list[Change]] = {a: [] for a in Action}
    # only the writes go to the threads: a no-op pass handed thousands of unchanged
    # objects to them, one future each, to do nothing
    writing = plan.pending + plan.restamps  # the restamps last, in waves of their own
    if not writing:
        return done
    with ThreadPoolExecutor(max_workers=pace.threads(conn, len(writing), workers)) as pool:
        for _, wave in groupby(writing, key=lambda c: (c.action is Action.PRUNE,
                                                       kinds.order(c.key[0]))):
            held = {g for c in refused for g in _holds(c)}  # as the wave starts
            for change in pool.map(lambda c, h=frozenset(held): one(c, h), list(wave)):
                if change is not None:
                    done[change.action].append(change)
    return done


WRITES = frozenset({Action.CREATE, Action.UPDATE, Action.REPLACE})


def _create(conn: ClusterAccess, plan: ClusterPlan, change: Change, scaled: bool,
            again: bool = True) -> bool:
    """Create the object of ``change`` if its name is free (True); else ``change`` becomes
    what the name's holder calls for (False): planned again against it, or a refusal.
    ``again``: the create may be tried once more if its holder is gone by the time it is
    read."""
    assert change.desired is not None
    try:
        change.predicted = write.create(conn, change.desired)
    except ConflictError:
        holder = read.get(conn, change.desired)
        if holder is None and again:  # gone again since: its name is free
            return _create(conn, plan, change, scaled, again=False)
        if holder is None:
            raise
        assert plan.taken is not None
        found = plan.taken(change.key, holder)
        change.action, change.live, change.predicted = found.action, found.live, found.predicted
        change.desired, change.reason, change.restamp = found.desired, found.reason, False
        return False
    except DynamicApiError as exc:
        if exc.status in RETRY_STATUSES:  # the cluster failing, not refusing the object
            raise
        change.action, change.reason = Action.INVALID, rejection(exc)
        return False
    # an autoscaled workload is created with its replicas, ours alone until its first
    # update hands them over (_hand_over_if_sole_owner): a first apply writes each object
    # once, as `kubectl apply --server-side` does, and one that is never updated never
    # pays for a hand-over (the HPA, scaling it, takes them anyway)
    return True


def _holds(refused: Change) -> list[tuple[str, ...]]:
    """What a refused create holds back: the rest of its app, and for a Namespace
    everything in it."""
    app = app_of(refused.desired or {})
    kind, _, name = refused.key
    return [*([("app", *app)] if app is not None else []),
            *([("namespace", name)] if kind == "Namespace" else [])]


def _held_by(change: Change) -> list[tuple[str, ...]]:
    """What a refusal before it may hold ``change`` back by: its app, its namespace."""
    app = app_of(change.desired or change.live or {})
    return [*([("app", *app)] if app is not None else []), ("namespace", change.key[1])]


def _first_line(text: str, limit: int = 200) -> str:
    line = text.splitlines()[0] if text else ""
    return line if len(line) <= limit else line[:limit - 3] + "..."


def _with_managed_fields(conn: ClusterAccess, live: Obj) -> Obj | None:
    """``live`` with its ``managedFields``: as it is when it has them, else (a lean LIST's
    object) as a GET returns it now."""
    if "managedFields" in (live.get("metadata") or {}):
        return live
    return read.get(conn, live)


def _hand_over_if_sole_owner(conn: ClusterAccess, change: Change,
                             version: str | None = None) -> str | None:
    """An autoscaled workload whose replicas are still ours alone (created with them, or
    before its scaler, and not scaled since): they are handed to a manager of their own
    before an apply that leaves them out (else it would reset them). ``version``: only if
    the object is still at that resourceVersion. The object's resourceVersion after the
    hand-over (None when there was none)."""
    assert change.desired is not None
    if change.live is not None \
            and _sole_replicas_owner(_with_managed_fields(conn, change.live)):
        return _hand_replicas_over(conn, {**change.desired, "spec": {
            "replicas": change.live["spec"].get("replicas", 1)}}, version)
    return None


def _restamp(conn: ClusterAccess, change: Change, scaled: bool) -> bool:
    """Apply an unchanged object once more, only to record it (:attr:`Change.restamp`),
    on condition that it is still the object the dry-run found unchanged (its
    resourceVersion as the apply's precondition): a write by anyone since would make the
    apply more than a record — it is left to the next pass's dry-run. False when so."""
    assert change.desired is not None and change.live is not None
    version = (change.live.get("metadata") or {}).get("resourceVersion")
    if not version:
        return False
    meta = change.desired["metadata"]
    try:
        if scaled:
            version = _hand_over_if_sole_owner(conn, change, version) or version
        change.predicted = write.apply(conn, {**change.desired, "metadata": {
            **meta, "resourceVersion": version}})
    except ConflictError:
        return False
    return True


def _sole_replicas_owner(live: Obj | None) -> bool:
    """Whether ``pincompile`` is the only manager of the live object's spec.replicas."""
    owners = [entry.get("manager") for entry in
              ((live or {}).get("metadata") or {}).get("managedFields") or []
              if "f:replicas" in ((entry.get("fieldsV1") or {}).get("f:spec") or {})]
    return owners == [FIELD_MANAGER]


def _hand_replicas_over(conn: ClusterAccess, obj: Obj, version: str | None = None) -> str | None:
    """Give a new autoscaled workload's ``spec.replicas`` to a manager of its own, so that
    leaving it out of later applies never resets it (the HPA takes it from there).
    ``version``: only if the object is still at that resourceVersion (else a conflict).
    The object's resourceVersion after it."""
    meta = obj["metadata"]
    precondition = {"resourceVersion": version} if version else {}
    written = write.apply(conn, {
        "apiVersion": obj["apiVersion"], "kind": obj["kind"],
        "metadata": {"name": meta["name"], "namespace": meta.get("namespace"),
                     **precondition},
        "spec": {"replicas": obj["spec"]["replicas"]},
    }, manager=INITIAL_REPLICAS_MANAGER)
    return (written.get("metadata") or {}).get("resourceVersion")
