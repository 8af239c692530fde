"""An app's pods in every member cluster, from a watch of each member's pods (the
reconciler's :class:`~reconciler.clients.cache.KindWatch`: one LIST to warm up, then WATCH), so a
warm read makes no request; and the member connections the log streams go through.

Plain functions and classes, so the web console reads pods the way the API does.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from kubernetes.dynamic.exceptions import DynamicApiError

from pincompile.manifest import LABEL_APP, LABEL_KIND, LABEL_PROJECT
from reconciler.clients import read
from reconciler.clients.cache import KindWatch
from reconciler.clients.connect import ClusterUnreachable, Connection, KubeconfigError
from reconciler.errors import CLUSTER_ERRORS, explain
from reconciler.kinds import KindInfo
from reconciler.model import AppKey, Obj
from reconciler.status.document import app_of

from .member_events import EVENT, NAMESPACED_OBJECTS, ObjectApps, lean_event, looked_up
from .models import ClusterProblem, ContainerPort, ContainerStatus, PodList, PodSummary

POD = KindInfo("v1", "Pod")


class MemberPods:
    """Every pod that carries an app's label, in every member cluster an app is placed in,
    kept current by one watch per cluster. A cluster is watched from the first read that
    names it; its kubeconfig context comes from ``contexts`` (the host's Cluster
    resources: :func:`reconciler.status.live.member_contexts`), looked up at most every
    ``LOOKUP_SECONDS``."""

    LOOKUP_SECONDS = 10.0
    FIRST_SYNC_SECONDS = 10.0
    """How long the first read of a cluster waits for its pods' first LIST."""
    EVENT_OBJECT_QPS, EVENT_OBJECT_BURST = 5.0, 20
    """How fast the objects Events name are read to find their apps (a Deployment's, an
    HPA's: not a pod's, nor a pod's owner's), per cluster; two threads read them all."""

    def __init__(self, kubeconfig: str | None, contexts: Callable[[], Mapping[str, str]]
                 ) -> None:
        self.kubeconfig, self.contexts = kubeconfig, contexts
        self.members: dict[str, Connection] = {}
        self._stop = threading.Event()
        self._watches: dict[str, KindWatch] = {}
        self._events: dict[str, KindWatch] = {}
        self._object_apps: dict[str, ObjectApps] = {}
        """Per cluster, the app of each object an Event names."""
        self._object_reads = ThreadPoolExecutor(max_workers=2,
                                                thread_name_prefix="event-objects")
        self._unknown: dict[str, str] = {}
        self._looked_up = -self.LOOKUP_SECONDS
        self._lock = threading.Lock()

    def watch_events(self) -> None:
        """From now on, also watch the Events of every cluster whose pods are watched (the
        insight store's collector asks; the API alone does not need them): one watch per
        cluster, holding those of the kinds an app is made of."""
        for name, pods in list(self._watches.items()):
            if name not in self._events:
                events = KindWatch(pods.conn, EVENT, self._stop,
                                   field_selector=NAMESPACED_OBJECTS, keep=lean_event)
                self._events[name] = events
                events.thread.start()

    def app_events(self) -> list[tuple[str, Obj, AppKey]]:
        """(cluster, Event, app) for each watched Event whose object is an app's."""
        found: list[tuple[str, Obj, AppKey]] = []
        for name, events in list(self._events.items()):
            watch = self._watches[name]
            with watch.lock:
                pods = list(watch.objects.values())
            with events.lock:
                items = list(events.objects.values())
            apps = self._object_apps.get(name)
            if apps is None:
                apps = self._object_apps[name] = ObjectApps(
                    partial(looked_up, watch.conn), self._object_reads,
                    self.EVENT_OBJECT_QPS, self.EVENT_OBJECT_BURST)
            found += [(name, event, app) for event, app in apps.of(pods, items)]
        return found

    def watch(self, clusters: Iterable[str]) -> None:
        """Watch the pods of every cluster in ``clusters`` not watched yet."""
        wanted = set(clusters) - set(self._watches)
        with self._lock:
            wanted -= set(self._watches)
            if not wanted or time.monotonic() - self._looked_up < self.LOOKUP_SECONDS:
                return
            self._looked_up = time.monotonic()
            try:
                contexts = dict(self.contexts())
            except (ClusterUnreachable, DynamicApiError) as exc:
                self._unknown = {name: f"its context cannot be looked up: {exc}"
                                 for name in wanted}
                return
            for name in sorted(wanted):
                self._start(name, contexts.get(name))

    def _start(self, name: str, context: str | None) -> None:
        if context is None:
            self._unknown[name] = "the host has no Cluster of that name"
            return
        try:
            conn = Connection(name, context, self.kubeconfig)
        except (ClusterUnreachable, KubeconfigError) as exc:
            self._unknown[name] = str(exc)
            return
        self._unknown.pop(name, None)
        self.members[name] = conn
        watch = KindWatch(conn, POD, self._stop, label_selector=LABEL_APP, keep=lean_pod)
        self._watches[name] = watch
        watch.thread.start()

    def wait_synced(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        for name, watch in self._watches.items():
            if not watch.synced.wait(max(0.0, deadline - time.monotonic())):
                raise ClusterUnreachable(f"{name} pods: the cache did not sync "
                                         f"({watch.error or 'timed out'})")

    def pods(self, app: AppKey, clusters: Iterable[str]) -> PodList:
        """``app``'s pods in ``clusters`` (where it is placed), sorted by cluster and name,
        and the clusters among them that cannot be read."""
        placed = set(clusters)
        self.watch(placed)
        deadline = time.monotonic() + self.FIRST_SYNC_SECONDS
        for name in sorted(placed & set(self._watches)):
            self._watches[name].synced.wait(max(0.0, deadline - time.monotonic()))
        items: list[PodSummary] = []
        unreadable = [ClusterProblem(cluster=name, message=why)
                      for name, why in sorted(self._unknown.items()) if name in placed]
        for name, watch in sorted(self._watches.items()):
            named = name in placed
            if not watch.synced.is_set():
                if named:
                    unreadable.append(ClusterProblem(
                        cluster=name, message=watch.error or "not read yet"))
                continue
            if watch.error and named:
                unreadable.append(ClusterProblem(cluster=name,
                                                 message=f"may be stale: {watch.error}"))
            with watch.lock:
                mine = [obj for obj in watch.objects.values() if app_of(obj) == app]
            items += [pod_summary(name, obj) for obj in mine]
        items.sort(key=lambda p: (p.cluster, p.namespace, p.name))
        return PodList(items=items, unreadable=unreadable)

    def connection(self, cluster: str) -> Connection | None:
        return self.members.get(cluster)

    def connect(self, clusters: Iterable[str]) -> dict[str, Connection | str]:
        """A connection to each of ``clusters`` (its pods watched from now on), or why
        there is none; the host's Cluster resources are read again for one not known."""
        wanted = set(clusters)
        if wanted - set(self.members):
            with self._lock:
                self._looked_up = -self.LOOKUP_SECONDS
            self.watch(wanted)
        return {name: self.members.get(name) or self._unknown.get(name, "not connected")
                for name in sorted(wanted)}

    def close(self) -> None:
        self._stop.set()
        self._object_reads.shutdown(wait=False, cancel_futures=True)
        for conn in self.members.values():
            conn.close()


class ListedPods:
    """An app's pods LISTed when asked (one request per cluster it is placed in, those
    LISTs in parallel, with the app's own labels as selector): the pod source of a
    one-shot command, which must not start watches it would not use. Member contexts come
    from ``contexts`` (the host's Cluster resources), looked up once."""

    def __init__(self, kubeconfig: str | None, contexts: Callable[[], Mapping[str, str]]
                 ) -> None:
        self.kubeconfig, self.contexts = kubeconfig, contexts
        self.members: dict[str, Connection] = {}
        self._known: dict[str, str] | None = None
        self._unknown: dict[str, str] = {}
        self._lock = threading.Lock()

    def connect(self, clusters: Iterable[str]) -> dict[str, Connection | str]:
        """A connection to each of ``clusters``, or why there is none."""
        wanted = sorted(set(clusters))
        with self._lock:
            if self._known is None and set(wanted) - set(self.members):
                try:
                    self._known = dict(self.contexts())
                except (ClusterUnreachable, DynamicApiError) as exc:
                    return {name: f"its context cannot be looked up: {exc}" for name in wanted}
            for name in wanted:
                if name not in self.members and name not in self._unknown:
                    self._open(name, (self._known or {}).get(name))
        return {name: self.members.get(name) or self._unknown[name] for name in wanted}

    def _open(self, name: str, context: str | None) -> None:
        if context is None:
            self._unknown[name] = "the host has no Cluster of that name"
            return
        try:
            self.members[name] = Connection(name, context, self.kubeconfig)
        except (ClusterUnreachable, KubeconfigError) as exc:
            self._unknown[name] = str(exc)

    def pods(self, app: AppKey, clusters: Iterable[str]) -> PodList:
        """``app``'s pods in ``clusters``, sorted by cluster and name, and the clusters
        among them that cannot be read."""
        kind, project, name = app
        labels = f"{LABEL_APP}={name},{LABEL_PROJECT}={project},{LABEL_KIND}={kind}"
        found = self.connect(clusters)
        unreadable = [ClusterProblem(cluster=c, message=why)
                      for c, why in found.items() if isinstance(why, str)]
        conns = [(c, conn) for c, conn in found.items() if not isinstance(conn, str)]

        def listed(item: tuple[str, Connection]) -> list[PodSummary] | str:
            cluster, conn = item
            try:
                objects, _ = read.list_managed(conn, POD, label_selector=labels)
            except CLUSTER_ERRORS as exc:
                return explain(exc)
            return [pod_summary(cluster, obj) for obj in objects.values()]

        items: list[PodSummary] = []
        with ThreadPoolExecutor(max_workers=8) as pool:
            for (cluster, _), result in zip(conns, pool.map(listed, conns), strict=True):
                if isinstance(result, str):
                    unreadable.append(ClusterProblem(cluster=cluster, message=result))
                else:
                    items += result
        items.sort(key=lambda p: (p.cluster, p.namespace, p.name))
        unreadable.sort(key=lambda p: p.cluster)
        return PodList(items=items, unreadable=unreadable)

    def connection(self, cluster: str) -> Connection | None:
        return self.members.get(cluster)

    def close(self) -> None:
        for conn in self.members.values():
            conn.close()


def pod_summary(cluster: str, pod: Obj) -> PodSummary:
    """What a user asks of a pod: where it runs, its phase, readiness, restarts and each
    container's state (the object's managed fields, spec and noise left out)."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, \
        pod.get("status") or {}
    reported = {str(c.get("name")): c for c in status.get("containerStatuses") or []}
    started = {str(c.get("name")): c for c in status.get("initContainerStatuses") or []}
    containers = [container_status(str(c.get("name", "")), reported.get(str(c.get("name"))), c)
                  for c in spec.get("containers") or []]
    containers += [container_status(str(c.get("name", "")), started.get(str(c.get("name"))), c,
                                    "sidecar" if c.get("restartPolicy") == "Always" else "init")
                   for c in spec.get("initContainers") or []]
    counted = [c for c in containers if c.type != "init"]  # as kubectl's READY
    return PodSummary(
        cluster=cluster, namespace=str(meta.get("namespace", "")), name=str(meta.get("name")),
        node=str(spec.get("nodeName") or ""), phase=str(status.get("phase") or "Unknown"),
        ready=f"{sum(c.ready for c in counted)}/{len(counted)}",
        restarts=sum(c.restarts for c in containers),
        created=str(meta.get("creationTimestamp") or ""), containers=containers)


def lean_pod(pod: Obj) -> Obj:
    """What the readers of the pods watch use of a pod (:func:`pod_summary`, and
    :func:`~reconciler.status.document.app_of` and
    :func:`~reconciler.api.member_events.pods_objects`: its labels and owners): its managed
    fields, the rest of its spec and status and its annotations left out. Logs, exec and
    port-forward pick their containers and ports from :func:`pod_summary`, so they read no
    more."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, \
        pod.get("status") or {}
    kept_meta: dict[str, Any] = {k: meta[k] for k in _META_FIELDS if k in meta}
    if meta.get("ownerReferences"):
        kept_meta["ownerReferences"] = [{k: o[k] for k in ("kind", "name") if k in o}
                                        for o in meta["ownerReferences"]]
    kept_spec: dict[str, Any] = {k: spec[k] for k in ("nodeName",) if k in spec}
    for field in ("containers", "initContainers"):
        if field in spec:
            kept_spec[field] = [{k: c[k] for k in ("name", "image", "restartPolicy", "ports")
                                 if k in c} for c in spec[field] or []]
    kept_status: dict[str, Any] = {k: status[k] for k in ("phase",) if k in status}
    for field in ("containerStatuses", "initContainerStatuses"):
        if field in status:
            kept_status[field] = [_lean_container_status(c) for c in status[field] or []]
    return {"apiVersion": pod.get("apiVersion"), "kind": pod.get("kind"),
            "metadata": kept_meta, "spec": kept_spec, "status": kept_status}


_META_FIELDS = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp", "labels")
"""What :func:`lean_pod` keeps of a pod's metadata, with its owners' kinds and names."""


def _lean_container_status(reported: Mapping[str, Any]) -> dict[str, Any]:
    """What :func:`container_status` reads of a container's reported status."""
    kept = {k: reported[k] for k in ("name", "image", "ready", "restartCount")
            if k in reported}
    if "state" in reported:
        kept["state"] = {state: {"reason": detail["reason"]}
                         if isinstance(detail, Mapping) and "reason" in detail else {}
                         for state, detail in (reported["state"] or {}).items()}
    terminated = (reported.get("lastState") or {}).get("terminated")
    if terminated:
        kept["lastState"] = {"terminated": {k: terminated[k] for k in ("reason", "exitCode")
                                            if k in terminated}}
    return kept


def container_status(name: str, reported: Mapping[str, Any] | None,
                     spec: Mapping[str, Any], kind: str = "container") -> ContainerStatus:
    """One container as its kubelet last reported it (``kind``: container, sidecar or
    init), with the ports its spec declares."""
    ports = [ContainerPort(name=str(p.get("name") or ""), containerPort=p["containerPort"],
                           protocol=str(p.get("protocol") or "TCP"))
             for p in spec.get("ports") or [] if isinstance(p, Mapping)
             and isinstance(p.get("containerPort"), int)]
    if reported is None:
        return ContainerStatus(name=name, type=kind, image=str(spec.get("image", "")),
                               ports=ports)
    states: dict[str, Any] = reported.get("state") or {}
    state, detail = next(iter(states.items()), ("unknown", {}))
    last: dict[str, Any] = (reported.get("lastState") or {}).get("terminated") or {}
    return ContainerStatus(
        name=name, type=kind, image=str(reported.get("image") or spec.get("image", "")),
        ready=bool(reported.get("ready")), restarts=int(reported.get("restartCount") or 0),
        state=str(state).capitalize(), reason=str(dict(detail or {}).get("reason") or ""),
        lastTerminationReason=str(last.get("reason") or ""),
        lastTerminationExitCode=last.get("exitCode"), ports=ports)
