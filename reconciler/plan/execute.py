"""Carry a cluster's plan out: applies in dependency order, replaces, re-records, prunes;
an autoscaled workload's replicas handed to a manager of their own."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from itertools import groupby

from kubernetes.dynamic.exceptions import ConflictError

from reconciler import kinds
from reconciler.clients import read, write
from reconciler.clients.access import FIELD_MANAGER, ClusterAccess
from reconciler.model import Obj
from reconciler.plan.change import Action, Change
from reconciler.plan.cluster_plan import ClusterPlan, autoscaled

INITIAL_REPLICAS_MANAGER = "pincompile-initial-replicas"


def execute(conn: ClusterAccess, plan: ClusterPlan, *, workers: int = 8,
            echo: Callable[[str], None] = lambda _m: None,
            on_done: Callable[[Change], None] = lambda _c: None) -> dict[Action, list[Change]]:
    """Carry out a plan: applies in dependency order (objects of one kind in parallel, a
    kind only once the kinds before it are done), replaces, then prunes in reverse order.
    Returns what was done, by action; ``on_done`` is told of each change once written."""
    scaled = autoscaled(c.desired for c in plan.changes if c.desired is not None)

    def one(change: Change) -> Change | None:
        if change.action is Action.UNCHANGED:  # a restamp: only those are handed here
            if not _restamp(conn, change, change.key in scaled):
                change.restamp = False  # not written: no longer among the plan's restamps
                echo(f"{plan.cluster}: not recorded {change.name}: changed since it was "
                     "planned (the next pass looks at it again)")
                return None
        elif change.action in (Action.CREATE, Action.UPDATE):
            assert change.desired is not None
            if change.action is not Action.CREATE and change.key in scaled:
                _hand_over_if_sole_owner(conn, change)
            change.predicted = write.apply(conn, change.desired)
            if change.action is Action.CREATE and "replicas" in change.desired.get("spec", {}) \
                    and change.key in scaled:
                _hand_replicas_over(conn, change.desired)
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
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for _, wave in groupby(writing, key=lambda c: (c.action is Action.PRUNE,
                                                       kinds.order(c.key[0]))):
            for change in pool.map(one, list(wave)):
                if change is not None:
                    done[change.action].append(change)
    return done


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
    """An autoscaled workload created before its scaler: its replicas, still ours alone,
    handed to a manager of their own before we stop setting them (else the apply would
    reset them). ``version``: only if the object is still at that resourceVersion. The
    object's resourceVersion after the hand-over (None when there was none)."""
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
