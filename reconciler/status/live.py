"""``pincompile status --live``: each app's status computed now from its objects in the
member clusters (the health rules of :mod:`reconciler.health`), not the host's record of
the last pass."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from reconciler.clients.read import Key
from reconciler.clock import iso_time
from reconciler.model import AppKey, Health, Obj, ObjectRef, Phase
from reconciler.status.document import APP_KINDS, ClusterView, app_of, app_status

Found = Mapping[str, "dict[Key, Obj] | str"]
"""Per member cluster: every managed object in it, or why it could not be read."""


def member_contexts(host_conn: Any) -> dict[str, str]:
    """Every member cluster the host knows (its ``Cluster`` resources) and the kubeconfig
    context the reconciler reaches it with."""
    from reconciler.host import read_apps, spec_kinds

    kinds = [k for k in spec_kinds() if k.kind == "Cluster"]
    return {key[2]: str((cr.get("spec") or {}).get("context") or key[2])
            for key, cr in read_apps(host_conn, kinds).items()}


def read_members(kubeconfig: str | None, contexts: Mapping[str, str]) -> dict[str, Any]:
    """:data:`Found` for every cluster in ``contexts``: one LIST per managed kind, at most
    eight clusters at a time."""
    from kubernetes.dynamic.exceptions import DynamicApiError

    from reconciler.clients.connect import ClusterUnreachable, Connection, KubeconfigError
    from reconciler.plan.cluster_plan import read_live

    def one(item: tuple[str, str]) -> tuple[str, dict[Key, Obj] | str]:
        name, context = item
        try:
            conn = Connection(name, context, kubeconfig)
        except (ClusterUnreachable, KubeconfigError, OSError) as exc:
            return name, str(exc)
        try:
            return name, read_live(conn)
        except DynamicApiError as exc:
            return name, f"API error {exc.status}: {exc.summary()}"
        except (ClusterUnreachable, OSError) as exc:
            return name, str(exc)
        finally:
            conn.close()

    if not contexts:
        return {}
    with ThreadPoolExecutor(max_workers=min(8, len(contexts))) as pool:
        return dict(pool.map(one, sorted(contexts.items())))


def live_rows(rows: list[dict[str, Any]], found: Found,
              now: float | None = None) -> list[dict[str, Any]]:
    """``rows`` (as :func:`reconciler.host.read_rows` reads them from the host)
    with every app's status computed from ``found``; ``statusTime`` is now."""
    by_app: dict[AppKey, dict[str, list[tuple[Key, Obj]]]] = defaultdict(
        lambda: defaultdict(list))
    for cluster, objects in found.items():
        if isinstance(objects, str):
            continue
        for key, obj in objects.items():
            app = app_of(obj)
            if app is not None:
                by_app[app][cluster].append((key, obj))
    stamp = iso_time(now if now is not None else time.time())
    out = []
    for row in rows:
        app = (row["kind"], row["project"], row["name"])
        if row["kind"] not in APP_KINDS:
            out.append(row)
            continue
        fresh = live_status(app, row["status"], by_app.get(app, {}), found, now)
        out.append({**row, "statusTime": stamp, "status": fresh})
    return out


def live_status(app: AppKey, stored: Mapping[str, Any],
                objects: Mapping[str, list[tuple[Key, Obj]]], found: Found,
                now: float | None = None) -> dict[str, Any]:
    """One app's status from its live ``objects`` per cluster; what only a pass knows (the
    rollout, failover, the revision applied) is kept from ``stored``. A cluster the stored
    status names where none of the app's objects are left is Missing."""
    clusters = {c.get("name") for c in stored.get("clusters") or []} | set(objects)
    views = []
    for cluster in sorted(c for c in clusters if c):
        reading = found.get(cluster)
        if isinstance(reading, str) or reading is None:
            views.append(ClusterView(cluster, error=reading or "not in the host's clusters"))
            continue
        view = ClusterView(cluster)
        for key, obj in sorted(objects.get(cluster, []), key=lambda item: item[0]):
            ref = ObjectRef(cluster, obj["apiVersion"], obj["kind"], key[1] or None, key[2])
            view.objects.append((ref, obj))
        if not view.objects:
            ref = ObjectRef(cluster, "pincompute.io/v1", app[0], app[1], app[2])
            view.objects.append((ref, None))
            view.problems[ref] = Health(Phase.MISSING, "none of its objects are in the cluster")
        views.append(view)
    revision = str(stored.get("observedRevision") or "")
    fresh = app_status(views, revision=revision, rollout=stored.get("rollout"),
                       previous=stored, applied=False, now=now)
    if stored.get("failover"):
        fresh["message"] = "; ".join(m for m in (stored["failover"].get("message"),
                                                 fresh["message"]) if m)
    return {**stored, **fresh}
