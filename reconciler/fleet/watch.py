"""Watch nodes and pods of fleet clusters and record every move away from Ready.

A node flap lasts a fraction of a second, so sampling misses it; this lists once, then
follows the watch stream from the list's resourceVersion (re-watching from the last seen
version), so every change the API server makes is seen. Used by the fleet's soak tests
and by ``bench/fleet_soak.py``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from reconciler.fleet.health import is_ready

#: seconds a single watch request lasts before it is renewed from the last version
WATCH_SECONDS = 20


@dataclass(frozen=True)
class Transition:
    """One observed change: a Ready node or pod that stopped being Ready (or vanished)."""

    cluster: str
    kind: str  # "Node" or "Pod"
    name: str  # node name, or namespace/pod
    what: str  # "not-ready", "deleted", "completed" (pods that ran to completion)
    detail: str
    at: float  # time.time()

    def __str__(self) -> str:
        stamp = time.strftime("%H:%M:%S", time.localtime(self.at))
        return f"{stamp} {self.cluster} {self.kind} {self.name}: {self.what} ({self.detail})"


def _ready_detail(obj: Any) -> str:
    for cond in obj.status.conditions or []:
        if cond.type == "Ready":
            return f"Ready={cond.status}" + (f" {cond.reason}" if cond.reason else "")
    return "no Ready condition"


@dataclass
class _Tracker:
    """Readiness per object of one kind in one cluster, fed by list + watch events."""

    cluster: str
    kind: str
    keep: Callable[[Any], bool]
    record: Callable[[Transition], None]
    ready: dict[str, bool] = field(default_factory=dict)
    became_ready: list[tuple[str, float]] = field(default_factory=list)

    def key(self, obj: Any) -> str:
        meta = obj.metadata
        return f"{meta.namespace}/{meta.name}" if self.kind == "Pod" else str(meta.name)

    def seed(self, items: Iterable[Any]) -> None:
        for obj in items:
            if self.keep(obj):
                done = getattr(obj.status, "phase", None) in ("Succeeded", "Failed")
                self.ready[self.key(obj)] = is_ready(obj) and not done

    def event(self, kind: str, obj: Any) -> None:
        if not self.keep(obj):
            return
        key = self.key(obj)
        was = self.ready.get(key, False)
        if kind == "DELETED" or obj.metadata.deletion_timestamp is not None:
            if was:
                self.record(Transition(self.cluster, self.kind, key, "deleted",
                                       _ready_detail(obj), time.time()))
            if kind == "DELETED":
                self.ready.pop(key, None)
            else:
                self.ready[key] = False
            return
        phase = getattr(obj.status, "phase", None)
        done = phase in ("Succeeded", "Failed")  # kwok leaves Ready=True on completed pods
        now = is_ready(obj) and not done
        if was and not now:
            what = "completed" if done else "not-ready"
            self.record(Transition(self.cluster, self.kind, key, what,
                                   _ready_detail(obj) + (f", phase {phase}" if phase else ""),
                                   time.time()))
        elif now and not was:
            self.became_ready.append((key, time.time()))
        self.ready[key] = now


class ReadinessWatch:
    """Watch every node and pod of some clusters of a fleet from :meth:`start` to
    :meth:`stop`; :attr:`transitions` lists every Ready node or pod that stopped being
    Ready, was deleted or completed.

    ``clusters``: names or contexts (default: all, host included). ``namespaces``: only
    pods in these (default: all).
    """

    def __init__(self, state: Any, clusters: Iterable[str] | None = None,
                 namespaces: Iterable[str] | None = None) -> None:
        from reconciler.fleet import fleet as fleet_mod

        self._fleet = fleet_mod
        self.state = state
        names = list(clusters) if clusters is not None else [c.name for c in state.clusters]
        self.runtimes = [state.cluster(name) for name in names]
        self.namespaces = set(namespaces) if namespaces is not None else None
        self.transitions: list[Transition] = []
        self.errors: list[str] = []
        self.trackers: list[_Tracker] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._streams: set[Any] = set()

    def _record(self, transition: Transition) -> None:
        with self._lock:
            self.transitions.append(transition)

    def _keep_pod(self, pod: Any) -> bool:
        return self.namespaces is None or pod.metadata.namespace in self.namespaces

    def start(self) -> ReadinessWatch:
        """List nodes and pods (their readiness now is the baseline), then watch."""
        from kubernetes import client

        for runtime in self.runtimes:
            api = self._fleet.api_client(self.state, runtime.context)
            try:
                core: Any = client.CoreV1Api(api)
                for kind, lister, keep in (
                        ("Node", core.list_node, lambda _o: True),
                        ("Pod", core.list_pod_for_all_namespaces, self._keep_pod)):
                    listed = lister(_request_timeout=30)
                    tracker = _Tracker(runtime.name, kind, keep, self._record)
                    tracker.seed(listed.items)
                    self.trackers.append(tracker)
                    thread = threading.Thread(
                        target=self._follow, args=(runtime.context, kind, tracker,
                                                   listed.metadata.resource_version),
                        name=f"watch-{kind}-{runtime.name}", daemon=True)
                    self._threads.append(thread)
            finally:
                api.close()
        for thread in self._threads:
            thread.start()
        return self

    def _follow(self, context: str, kind: str, tracker: _Tracker, version: str) -> None:
        from kubernetes import client, watch
        from kubernetes.client.rest import ApiException
        from urllib3.exceptions import HTTPError

        api = self._fleet.api_client(self.state, context)
        core: Any = client.CoreV1Api(api)
        lister = core.list_node if kind == "Node" else core.list_pod_for_all_namespaces
        try:
            while not self._stop.is_set():
                stream = watch.Watch()
                with self._lock:
                    self._streams.add(stream)
                try:
                    for event in stream.stream(lister, resource_version=version,
                                               timeout_seconds=WATCH_SECONDS,
                                               allow_watch_bookmarks=True,
                                               _request_timeout=WATCH_SECONDS + 10):
                        if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                            tracker.event(event["type"], event["object"])
                        if self._stop.is_set():
                            stream.stop()
                    version = stream.resource_version or version
                except ApiException as exc:
                    if exc.status == 410:  # too old: list again, compare with what we knew
                        listed = lister(_request_timeout=30)
                        for obj in listed.items:
                            tracker.event("MODIFIED", obj)
                        version = listed.metadata.resource_version
                        self._error(f"{tracker.cluster} {kind} watch expired; re-listed")
                    else:
                        self._error(f"{tracker.cluster} {kind} watch: {exc.status} {exc.reason}")
                        self._stop.wait(1.0)
                except (HTTPError, OSError, ValueError) as exc:
                    if not self._stop.is_set():
                        self._error(f"{tracker.cluster} {kind} watch: {type(exc).__name__}")
                        self._stop.wait(1.0)
                finally:
                    with self._lock:
                        self._streams.discard(stream)
        finally:
            api.close()

    def _error(self, message: str) -> None:
        with self._lock:
            self.errors.append(message)

    def stop(self) -> list[Transition]:
        """Stop watching (within a watch period); return the recorded transitions."""
        self._stop.set()
        with self._lock:
            streams = list(self._streams)
        for stream in streams:
            stream.stop()  # unblocks a read in progress
        for thread in self._threads:
            thread.join(timeout=WATCH_SECONDS + 15)
        return self.transitions

    def of(self, kind: str, what: str | None = None) -> list[Transition]:
        """Recorded transitions of one kind (and one sort, e.g. ``not-ready``)."""
        with self._lock:
            return [t for t in self.transitions
                    if t.kind == kind and (what is None or t.what == what)]

    def became_ready(self, kind: str) -> list[str]:
        """Keys (cluster/name) of objects that turned Ready while watched."""
        return [f"{t.cluster}/{key}" for t in self.trackers if t.kind == kind
                for key, _at in t.became_ready]

    def ready_now(self, kind: str) -> dict[str, bool]:
        """Key (cluster/name) -> readiness as last seen."""
        return {f"{t.cluster}/{key}": ready for t in self.trackers if t.kind == kind
                for key, ready in t.ready.items()}
