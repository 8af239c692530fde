"""Where the insight views read from: the host's Project and Cluster resources and, per
member cluster, its nodes, running pods, pincompile ResourceQuotas and pod metrics.

``serve`` keeps them by watches (:class:`WatchedInsight`: a member is watched from the
first read that names it; the metrics API, which cannot be watched, is read at most every
``METRICS_SECONDS``); a one-shot command LISTs once (:class:`ListedInsight`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from kubernetes.dynamic.exceptions import DynamicApiError, ResourceNotFoundError

from reconciler.clients import read
from reconciler.clients.access import ClusterAccess
from reconciler.clients.cache import KindWatch
from reconciler.clients.connect import ClusterUnreachable, Connection, KubeconfigError
from reconciler.host import read_apps, spec_kinds
from reconciler.insight.records import Reading, lean_node, lean_pod, reading_of
from reconciler.kinds import KindInfo
from reconciler.model import Obj

NODE = KindInfo("v1", "Node", namespaced=False)
POD = KindInfo("v1", "Pod")
QUOTA = KindInfo("v1", "ResourceQuota")
POD_METRICS = KindInfo("metrics.k8s.io/v1beta1", "PodMetrics")
EVERY_NODE = "kubernetes.io/os"
"""A label every kubelet sets: the node watch's selector (it must name one)."""
RUNNING = "status.phase!=Succeeded,status.phase!=Failed"
"""The pods that hold what they request."""
ERRORS = (ClusterUnreachable, KubeconfigError, DynamicApiError, OSError, ValueError)


class InsightSource(Protocol):
    def projects(self) -> list[Obj]:
        """The host's Project resources."""

    def clusters(self) -> list[Obj]:
        """The host's Cluster resources (their ``status.failover`` included)."""

    def readings(self, names: Iterable[str]) -> dict[str, Reading]:
        """Each named member cluster as read now (or as its watches hold it)."""


def _host_kind(name: str) -> KindInfo:
    return next(k for k in spec_kinds() if k.kind == name)


def _name(cr: Obj) -> str:
    return str((cr.get("metadata") or {}).get("name") or "")


def _context(cr: Obj) -> str:
    return str((cr.get("spec") or {}).get("context") or _name(cr))


def read_metrics(conn: ClusterAccess) -> tuple[list[Obj] | None, str | None]:
    """Every pod's metrics in the cluster (one LIST of ``metrics.k8s.io``), or why not."""
    try:
        return conn.list(POD_METRICS)["items"], None
    except ResourceNotFoundError:
        return None, "the metrics API (metrics.k8s.io) is not served"
    except DynamicApiError as exc:
        return None, f"the metrics API refused: {exc.summary()}"
    except (ClusterUnreachable, OSError, ValueError) as exc:
        return None, f"the metrics API cannot be read: {exc}"


def read_member(name: str, context: str, kubeconfig: str | None) -> Reading:
    """One member cluster LISTed now: nodes, running pods, quotas, pod metrics."""
    now = time.time()
    try:
        conn = Connection(name, context, kubeconfig)
    except ERRORS as exc:
        return Reading(name, now, error=str(exc))
    try:
        nodes, _ = read.list_managed(conn, NODE, label_selector=EVERY_NODE)
        pods, _ = read.list_managed(conn, POD, field_selector=RUNNING, lean=True)
        quotas, _ = read.list_managed(conn, QUOTA)
        metrics, why = read_metrics(conn)
    except DynamicApiError as exc:
        return Reading(name, now, error=f"API error {exc.status}: {exc.summary()}")
    except ERRORS as exc:
        return Reading(name, now, error=str(exc))
    finally:
        conn.close()
    lean = [kept for p in pods.values() if (kept := lean_pod(p)) is not None]
    return reading_of(name, now, nodes.values(), lean, quotas.values(), metrics, why)


class ListedInsight:
    """The one-shot source: the host's resources LISTed once when first asked, each member
    when first asked (in parallel), never watched."""

    def __init__(self, host: Connection, kubeconfig: str | None) -> None:
        self.host, self.kubeconfig = host, kubeconfig
        self._found: dict[tuple[str, str, str], Obj] | None = None
        self._read: dict[str, Reading] = {}

    def _host_objects(self, kind: str) -> list[Obj]:
        if self._found is None:  # at the first call that needs them: one LIST per kind
            self._found = read_apps(self.host, [_host_kind("Project"), _host_kind("Cluster")])
        return [o for k, o in sorted(self._found.items()) if k[0] == kind]

    def projects(self) -> list[Obj]:
        return self._host_objects("Project")

    def clusters(self) -> list[Obj]:
        return self._host_objects("Cluster")

    def readings(self, names: Iterable[str]) -> dict[str, Reading]:
        contexts: dict[str, str] = {_name(o): _context(o) for o in self.clusters()}
        wanted = [n for n in sorted(set(names)) if n not in self._read]
        if wanted:
            with ThreadPoolExecutor(max_workers=min(8, len(wanted))) as pool:
                for reading in pool.map(
                        lambda n: read_member(n, contexts.get(n) or n, self.kubeconfig),
                        wanted):
                    self._read[reading.cluster] = reading
        return {n: self._read[n] for n in names if n in self._read}


class _Member:
    """One member's watches and its last pod metrics."""

    def __init__(self, conn: Connection, stop: threading.Event) -> None:
        self.conn = conn
        self.watches = [KindWatch(conn, NODE, stop, label_selector=EVERY_NODE, keep=lean_node),
                        KindWatch(conn, POD, stop, field_selector=RUNNING, keep=lean_pod),
                        KindWatch(conn, QUOTA, stop)]
        for watch in self.watches:
            watch.thread.start()
        self.metrics: tuple[float, list[Obj] | None, str | None] = (0.0, None, None)
        self.lock = threading.Lock()

    def reading(self, metrics_seconds: float, first_sync: float) -> Reading:
        deadline = time.monotonic() + first_sync
        for watch in self.watches:
            if not watch.synced.wait(max(0.0, deadline - time.monotonic())):
                return Reading(self.conn.name, time.time(),
                               error=watch.error or f"{watch.kind.kind}s not read yet")
        with self.lock:
            if time.monotonic() - self.metrics[0] >= metrics_seconds:
                self.metrics = (time.monotonic(), *read_metrics(self.conn))
            _, metrics, why = self.metrics
        nodes, pods, quotas = (self._objects(w) for w in self.watches)
        reading = reading_of(self.conn.name, time.time(), nodes, pods, quotas, metrics, why)
        errors = [w.error for w in self.watches if w.error]
        if errors:
            reading.metrics_error = "; ".join(f"may be stale: {e}" for e in errors)
        return reading

    @staticmethod
    def _objects(watch: KindWatch) -> list[Obj]:
        with watch.lock:
            return list(watch.objects.values())


class WatchedInsight:
    """``serve``'s source: the host's Project and Cluster resources watched, each member
    watched from the first read that names it."""

    METRICS_SECONDS = 15.0
    FIRST_SYNC_SECONDS = 10.0

    def __init__(self, host: Connection, kubeconfig: str | None) -> None:
        self.kubeconfig = kubeconfig
        self._stop = threading.Event()
        self._host = [KindWatch(host, _host_kind(k), self._stop) for k in ("Project", "Cluster")]
        for watch in self._host:
            watch.thread.start()
        self._members: dict[str, _Member | str] = {}
        self._lock = threading.Lock()

    def _host_objects(self, index: int) -> list[Obj]:
        watch = self._host[index]
        watch.synced.wait(self.FIRST_SYNC_SECONDS)
        with watch.lock:
            return sorted(watch.objects.values(), key=_name)

    def projects(self) -> list[Obj]:
        return self._host_objects(0)

    def clusters(self) -> list[Obj]:
        return self._host_objects(1)

    def readings(self, names: Iterable[str]) -> dict[str, Reading]:
        contexts: dict[str, str] = {_name(o): _context(o) for o in self.clusters()}
        out = {}
        for name in sorted(set(names)):
            member = self._member(name, contexts.get(name))
            out[name] = (Reading(name, time.time(), error=member) if isinstance(member, str)
                         else member.reading(self.METRICS_SECONDS, self.FIRST_SYNC_SECONDS))
        return out

    def _member(self, name: str, context: str | None) -> _Member | str:
        with self._lock:
            known = self._members.get(name)
            if isinstance(known, _Member):
                return known
            if context is None:
                return "the host has no Cluster of that name"
            try:
                self._members[name] = _Member(Connection(name, context, self.kubeconfig),
                                              self._stop)
            except (ClusterUnreachable, KubeconfigError) as exc:
                return str(exc)  # tried again at the next read
            return self._members[name]

    def close(self) -> None:
        self._stop.set()
        for member in self._members.values():
            if isinstance(member, _Member):
                member.conn.close()
