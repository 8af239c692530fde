"""The pass's host step: the CRDs ensured and the host's spec resources read (one LIST per
kind, or a long-running reconciler's watch cache), and the host's plan carried out in the
background while the members are planned and written."""

from __future__ import annotations

from reconciler import host
from reconciler.clients import read
from reconciler.clients.access import ClusterAccess
from reconciler.clients.cache import ClusterCache
from reconciler.clients.read import Key, key_of
from reconciler.kinds import MANAGED_KINDS
from reconciler.model import AppKey, ClusterReport, Obj
from reconciler.plan.change import Action
from reconciler.plan.cluster_plan import ClusterPlan
from reconciler.plan.execute import execute

HOST = "host"
NAMESPACE = next(k for k in MANAGED_KINDS if k.kind == "Namespace")


def live_state(conn: ClusterAccess, cache: ClusterCache | None, watch: bool
               ) -> tuple[dict[Key, Obj], list[Obj], ClusterCache | None]:
    """The host's spec resources and their namespaces; the CRDs written that may not be
    served yet (their objects wait for them); and (``watch``) the host's watch cache,
    which also holds the CRDs: ``cache`` itself, or a new one when there was none or the
    CRDs changed version."""
    watched = [host.CRD_KIND, *host.spec_kinds(), NAMESPACE]
    if not watch:
        existing, _ = read.list_managed(conn, host.CRD_KIND, lean=True)
        written = host.install_crds(conn, existing)
        # a kind whose CRD is only being created has no objects yet: nothing to list
        new = {host.kind_of(c) for c in written if key_of(c) not in existing}
        return read.list_many(conn, [k for k in watched[1:] if k.kind not in new],
                              lean=True), written, None
    if cache is not None:
        live = cache.snapshot()
        crds = {k: o for k, o in live.items() if k[0] == host.CRD_KIND.kind}
        if host.ensure_crds(conn, existing=crds):  # another version's CRDs: watch anew
            cache.close()
            cache = None
    if cache is None:
        host.ensure_crds(conn)
        cache = ClusterCache(conn, watched=watched)
    return {k: o for k, o in cache.snapshot().items() if k[0] != host.CRD_KIND.kind}, [], cache


def apps_after(live: dict[Key, Obj], plan: ClusterPlan) -> dict[AppKey, Obj]:
    """The app resources (with their stored status) as they will be once ``plan`` is
    written."""
    apps = {host.app_key(o): o for k, o in live.items() if k[0] != "Namespace"}
    for change in plan.pending:
        if change.key[0] == "Namespace":
            continue
        if change.action is Action.PRUNE and change.live is not None:
            apps.pop(host.app_key(change.live), None)
        elif change.predicted is not None:
            apps[host.app_key(change.predicted)] = change.predicted
    return apps


def write_plan(conn: ClusterAccess, plan: ClusterPlan, done_report: ClusterReport,
               crds: list[Obj]) -> None:
    """Carry out the host's plan once the ``crds`` just written are served; what it did
    goes into the host's report."""
    host.wait_served(conn, crds)
    done = execute(conn, plan)
    done_report.created = [c.ref(HOST) for c in done[Action.CREATE]]
    done_report.updated = [c.ref(HOST) for c in done[Action.UPDATE]]
    done_report.pruned = [c.ref(HOST) for c in done[Action.PRUNE]]
