"""The host cluster holds the truth: every spec as its ``pincompute.io`` custom resource,
each app's aggregated status (rollout state included) in that resource's status, and
Kubernetes Events on it for every apply, prune, replace, zone promoted and rollout halted.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pincompile.contract import Catalog, crds
from pincompile.manifest import ANNOTATION_REVISION, MANAGED_BY, MANAGED_BY_VALUE
from reconciler.clients import read, write
from reconciler.clients.access import ClusterAccess
from reconciler.kinds import KindInfo
from reconciler.model import AppKey, Obj
from reconciler.status.events import EventLog, Recorded

API_VERSION = f"{crds.GROUP}/{crds.VERSION}"
ANNOTATION_COMPILED = "pincompute.io/compiled-digest"
"""On an app's resource: the digest of the app's compiled objects (see
:func:`reconciler.desired.app_digests`). A commit that changes them changes it, so the
resource is written again, with that commit in its ``pincompute.io/revision``; a commit
that leaves them alone writes nothing."""
CRD_KIND = KindInfo("apiextensions.k8s.io/v1", "CustomResourceDefinition", False)


def spec_kinds() -> list[KindInfo]:
    """The custom resource kinds the host stores, as the sync machinery sees them."""
    from pincompile.contract import KINDS

    return [KindInfo(API_VERSION, kind, namespaced=crds.kind_info(kind).scope == "Namespaced")
            for kind in KINDS]


@functools.cache
def _wanted_crds() -> tuple[Obj, ...]:
    """This version's CRDs: a pure function of the models, and costly to build, so a
    long-running reconciler builds them once (read-only: never modify them)."""
    return tuple(crds.all_crds())


def ensure_crds(conn: ClusterAccess, *, timeout: float = 60.0,
                existing: Mapping[read.Key, Obj] | None = None) -> int:
    """Install the CRDs that are missing (or differ); wait until served. Returns how many
    were written. ``existing``: the live CRDs (a watch cache's), else one LIST."""
    written = install_crds(conn, existing)
    wait_served(conn, written, timeout=timeout)
    return len(written)


def install_crds(conn: ClusterAccess, existing: Mapping[read.Key, Obj] | None = None
                 ) -> list[Obj]:
    """Install the CRDs that are missing (or differ), without waiting for them to be served
    (:func:`wait_served`); the CRDs written. ``existing``: the live CRDs, else one LIST."""
    if existing is None:
        existing, _ = read.list_managed(conn, CRD_KIND, lean=True)
    written = []
    for crd in _wanted_crds():
        live = existing.get(read.key_of({**crd, "kind": "CustomResourceDefinition"}))
        if live is not None and live.get("spec", {}).get("versions", [{}])[0].get("schema") \
                == crd["spec"]["versions"][0]["schema"]:
            continue
        write.apply(conn, crd)
        written.append(crd)
    return written


def wait_served(conn: ClusterAccess, written: list[Obj], *, timeout: float = 60.0) -> None:
    """Wait until the API server serves the kinds of the CRDs just ``written``."""
    if not written:
        return
    deadline = time.monotonic() + timeout
    for crd in written:
        while time.monotonic() < deadline and not _established(conn.get(crd)):
            time.sleep(0.2)
    conn.rediscover()


def kind_of(crd: Obj) -> str:
    """The kind a CRD defines."""
    return str(crd["spec"]["names"]["kind"])


def _established(crd: Obj | None) -> bool:
    """Whether the API server serves a CRD's resources (its ``Established`` condition)."""
    conditions = ((crd or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True"
               for c in conditions)


def desired_objects(catalog: Catalog, revision: str,
                    digests: Mapping[AppKey, str] | None = None) -> list[Obj]:
    """Every spec as its custom resource, plus the project namespaces they live in; an
    app's resource carries the digest of its compiled objects (``digests``)."""
    out: list[Obj] = []
    namespaces: set[str] = set()
    for entry in catalog.entries:
        data = json.loads(json.dumps(entry.doc.data))  # a copy of our own
        cr = crds.custom_resource(data, owned=True)
        meta = cr["metadata"]
        meta.setdefault("labels", {})[MANAGED_BY] = MANAGED_BY_VALUE
        meta.setdefault("annotations", {})["pincompute.io/source"] = entry.file
        meta["annotations"][ANNOTATION_REVISION] = revision
        digest = (digests or {}).get(app_key(cr))
        if digest is not None:
            meta["annotations"][ANNOTATION_COMPILED] = digest
        if meta.get("namespace"):
            namespaces.add(meta["namespace"])
        out.append(cr)
    for ns in sorted(namespaces):
        out.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": ns, "labels": {MANAGED_BY: MANAGED_BY_VALUE}}})
    return out


def app_key(cr: Obj) -> AppKey:
    meta = cr["metadata"]
    project = (meta.get("labels") or {}).get(crds.PROJECT_LABEL) or meta.get("namespace") or ""
    return (str(cr["kind"]), str(project), str(meta["name"]))


def observed_revision(cr: Obj) -> str | None:
    """The commit that last changed an app's spec or compiled objects: the revision its
    resource was last written at (a commit that changes neither leaves it)."""
    annotations = (cr.get("metadata") or {}).get("annotations") or {}
    revision = annotations.get(ANNOTATION_REVISION)
    return str(revision) if revision else None


def cr_ref(key: AppKey) -> Obj:
    """The identity of an app's custom resource (namespace = project)."""
    kind, project, name = key
    return {"apiVersion": API_VERSION, "kind": kind,
            "metadata": {"name": name, "namespace": project}}


def write_status(conn: ClusterAccess, key: AppKey, status: dict[str, Any]) -> None:
    """Server-side apply of an app's status subresource."""
    obj = cr_ref(key)
    obj["status"] = status
    write.apply(conn, obj, subresource="status")


def write_cluster_status(conn: ClusterAccess, name: str, status: dict[str, Any]) -> None:
    """Server-side apply of a (cluster-scoped) Cluster resource's status subresource."""
    write.apply(conn, {"apiVersion": API_VERSION, "kind": "Cluster",
                       "metadata": {"name": name}, "status": status}, subresource="status")


def record_event(conn: ClusterAccess, key: AppKey, reason: str, message: str, *,
                 uid: str | None = None, warning: bool = False,
                 log: EventLog | None = None) -> None:
    """A Kubernetes Event on an app's custom resource; with ``log``, one that repeats an
    Event recorded lately is counted on that one (``count`` + 1, a new ``lastTimestamp``:
    one server-side apply, as Kubernetes counts repeated Events), not added."""
    kind, project, name = key
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    text = message[:1000]
    body = {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"generateName": f"{name}.", "namespace": project},
        "involvedObject": {"apiVersion": API_VERSION, "kind": kind, "name": name,
                           "namespace": project, **({"uid": uid} if uid else {})},
        "reason": reason, "message": text,
        "type": "Warning" if warning else "Normal",
        "source": {"component": "pincompile"},
        "reportingComponent": "pincompile", "reportingInstance": "pincompile",
        "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
    }
    same = (key, reason, str(body["type"]), text)
    last = log.last(same) if log is not None else None
    count = 1 if last is None else last.count + 1
    if last is None:
        written = conn.create(body)
    else:  # the same again: counted on the Event it repeats
        body |= {"metadata": {"name": last.name, "namespace": project}, "count": count,
                 "firstTimestamp": last.first}
        written = write.apply(conn, body)
    if log is not None:
        log.remember(same, Recorded(str(written["metadata"]["name"]), count,
                                    last.first if last is not None else stamp))


def read_apps(conn: ClusterAccess, kinds: Iterable[KindInfo]) -> dict[AppKey, Obj]:
    """Every app custom resource on the host (one LIST per kind, in parallel)."""
    served = [kind for kind in kinds if read.served(conn, kind)]
    return {app_key(obj): obj for obj in read.list_many(conn, served).values()}


def read_rows(conn: ClusterAccess, keep: Callable[[AppKey, Obj], bool] | None = None
              ) -> list[dict[str, Any]]:
    """Every app's stored status on the host (workloads and PinScalers; only those
    ``keep`` keeps); then a row per member cluster that is not simply reachable (kind
    ``Cluster``, its ``status.failover``). ``statusTime``: when the status was last
    written (the API server's record of that write)."""
    from pincompile.contract import WORKLOAD_KINDS

    kinds = [k for k in spec_kinds() if k.kind in (*WORKLOAD_KINDS, "PinScaler", "Cluster")]
    rows = []
    for key, cr in sorted(read_apps(conn, kinds).items(), key=lambda i: app_key(i[1])):
        st = cr.get("status") or {}
        if key[0] == "Cluster" and (st.get("failover") or {}).get("phase", "Reachable") \
                == "Reachable":
            continue
        if keep is not None and key[0] != "Cluster" and not keep(key, cr):
            continue
        rows.append({"kind": key[0], "project": key[1], "name": key[2],
                     "statusTime": status_time(cr), "status": st})
    return [r for r in rows if r["kind"] != "Cluster"] + [r for r in rows
                                                          if r["kind"] == "Cluster"]


def status_time(cr: Obj) -> str | None:
    """When the resource's status was last written: the newest ``managedFields`` time of
    the status subresource (None when it never was)."""
    times = [str(m["time"]) for m in (cr.get("metadata") or {}).get("managedFields") or []
             if m.get("subresource") == "status" and m.get("time")]
    return max(times, default=None)
