"""Each pod's own log on the local fleet.

For one cluster, :class:`PodLogs` watches the pods scheduled to its nodes. A new pod gets
a log file per container (:func:`.debugging.log_file`) and a kwok ``Logs`` object that
names them; while it runs, :meth:`PodLogs.write` appends a line to each of its
containers' logs (every :data:`.debugging.LOG_INTERVAL` seconds, as the pod agent calls
it). A file over :data:`LOG_LIMIT` bytes is rotated (the one before is kept as ``.1``), as a
kubelet's are. When the pod is deleted its files go, its ``Logs`` object is collected
with it (it is owned by the pod) and ``on_gone`` ends its exec sessions.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reconciler.fleet import debugging

LOG_LIMIT = 256 * 1024
#: a pod's log is served once its Logs object is this old (kwok has seen it by then; 1 s
#: was too short with two fleets on two cores: kwok answered 400 for a new pod's log)
SETTLE_SECONDS = 3.0
WATCH_SECONDS = 300
RETRY_SECONDS = (1.0, 2.0, 5.0, 10.0)


@dataclass
class Pod:
    """What the fleet keeps of one pod: its identity, its containers, whether it runs."""

    namespace: str
    name: str
    uid: str
    containers: tuple[str, ...]
    running: bool
    lines: int = 0
    #: when its Logs object was created (0: not yet)
    logs_since: float = 0.0


def pod_of(obj: dict[str, Any]) -> Pod:
    """The fleet's view of a Pod object (as JSON)."""
    meta, spec = obj["metadata"], obj.get("spec") or {}
    names = [c["name"] for key in ("initContainers", "containers")
             for c in spec.get(key) or []]
    return Pod(meta["namespace"], meta["name"], meta.get("uid", ""), tuple(names),
               (obj.get("status") or {}).get("phase") == "Running")


def log_line(number: int, now: dt.datetime) -> str:
    """One line of a container's log, in the CRI format."""
    stamp = now.strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"
    return f"{stamp} stdout F pincompile fleet: pod log line {number}\n"


class PodLogs:
    """The log files and ``Logs`` objects of one cluster's pods."""

    def __init__(self, cluster: str, fleet_dir: Path, api: Callable[[], Any],
                 on_gone: Callable[[str, str], None] = lambda _ns, _pod: None,
                 echo: Callable[[str], None] = print) -> None:
        self.cluster, self.fleet_dir = cluster, fleet_dir
        self._api, self._on_gone, self._echo = api, on_gone, echo
        self.pods: dict[tuple[str, str], Pod] = {}
        self._lock = threading.Lock()

    def ready(self, namespace: str, name: str) -> bool:
        """Whether kwok serves this pod's log by now."""
        with self._lock:
            pod = self.pods.get((namespace, name))
        return bool(pod and pod.logs_since
                    and time.monotonic() - pod.logs_since >= SETTLE_SECONDS)

    def seen(self, obj: dict[str, Any], create: Callable[[Pod], None]) -> None:
        """A pod was added or changed: set up its log if it is new (or a new pod of the
        same name), note whether it runs."""
        pod = pod_of(obj)
        key = (pod.namespace, pod.name)
        with self._lock:
            known = self.pods.get(key)
            if known is not None and known.uid == pod.uid and known.logs_since:
                known.running, known.containers = pod.running, pod.containers
                return
            self.pods[key] = pod
        directory = debugging.pod_dir(self.fleet_dir, self.cluster, *key)
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(mode=0o700, parents=True)
        for container in pod.containers:
            debugging.log_file(self.fleet_dir, self.cluster, *key, container).touch()
        create(pod)
        pod.logs_since = time.monotonic()

    def gone(self, namespace: str, name: str) -> None:
        """A pod was deleted: its files go, its exec sessions end."""
        with self._lock:
            self.pods.pop((namespace, name), None)
        shutil.rmtree(debugging.pod_dir(self.fleet_dir, self.cluster, namespace, name),
                      ignore_errors=True)
        self._on_gone(namespace, name)

    def write(self, now: dt.datetime | None = None) -> int:
        """Append a line to the log of each container of each running pod; how many."""
        now = now or dt.datetime.now(dt.UTC)
        with self._lock:
            running = [p for p in self.pods.values() if p.running and p.logs_since]
        written = 0
        for pod in running:
            pod.lines += 1
            for container in pod.containers:
                path = debugging.log_file(self.fleet_dir, self.cluster, pod.namespace,
                                          pod.name, container)
                written += _append(path, log_line(pod.lines, now))
        return written

    def sync(self, items: list[dict[str, Any]], create: Callable[[Pod], None]) -> None:
        """Make the known pods those of a fresh list."""
        listed = {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in items}
        with self._lock:
            stale = [key for key in self.pods if key not in listed]
        for key in stale:
            self.gone(*key)
        for obj in items:
            self.seen(obj, create)

    def run(self, stop: threading.Event) -> None:
        """List and watch the cluster's scheduled pods until ``stop`` is set; reconnect
        (quietly, with a growing pause) while its API server cannot be reached."""
        failures = 0
        while not stop.is_set():
            api = self._api()
            try:
                self._list_and_watch(api, stop)
                failures = 0
            except Exception as exc:  # the API server is down, a watch expired, ...
                if failures == 0:
                    self._echo(f"pod logs of {self.cluster}: {type(exc).__name__}: {exc}; "
                               "retrying")
                stop.wait(RETRY_SECONDS[min(failures, len(RETRY_SECONDS) - 1)])
                failures += 1
            finally:
                api.close()

    def _list_and_watch(self, api: Any, stop: threading.Event) -> None:
        from kubernetes import client
        from kubernetes.watch.watch import iter_resp_lines

        core: Any = client.CoreV1Api(api)
        custom: Any = client.CustomObjectsApi(api)
        listed = json.loads(core.list_pod_for_all_namespaces(
            field_selector="spec.nodeName!=", _preload_content=False,
            _request_timeout=30).data)
        self.sync(listed["items"], lambda pod: create_logs(custom, self, pod))
        version = listed["metadata"]["resourceVersion"]
        while not stop.is_set():
            resp = core.list_pod_for_all_namespaces(
                field_selector="spec.nodeName!=", watch=True, resource_version=version,
                allow_watch_bookmarks=True, timeout_seconds=WATCH_SECONDS,
                _preload_content=False, _request_timeout=(10, WATCH_SECONDS + 30))
            try:
                for event in _events(iter_resp_lines(resp)):
                    if event["type"] == "ERROR":
                        raise RuntimeError(f"watch: {event['object'].get('message')}")
                    obj = event["object"]
                    version = obj["metadata"].get("resourceVersion", version)
                    if event["type"] == "DELETED":
                        self.gone(obj["metadata"]["namespace"], obj["metadata"]["name"])
                    elif event["type"] in ("ADDED", "MODIFIED"):
                        self.seen(obj, lambda pod: create_logs(custom, self, pod))
            finally:
                resp.release_conn()


def _events(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    for line in lines:
        if line.strip():
            yield json.loads(line)


def _append(path: Path, line: str) -> int:
    """Append ``line`` (rotating a full file first); 1 if written, 0 if the pod's
    directory is gone."""
    try:
        if path.stat().st_size > LOG_LIMIT:
            os.replace(path, path.with_name(path.name + ".1"))
        with open(path, "a") as out:
            out.write(line)
        return 1
    except FileNotFoundError:
        return 0


def create_logs(custom: Any, logs: PodLogs, pod: Pod) -> None:
    """Create (or take over) the kwok ``Logs`` object of a pod."""
    from kubernetes.client.rest import ApiException

    body = debugging.logs_object(logs.fleet_dir, logs.cluster, pod.namespace, pod.name,
                                 pod.uid, list(pod.containers))
    args = (debugging.KWOK_GROUP, debugging.KWOK_VERSION, pod.namespace, "logs")
    try:
        custom.create_namespaced_custom_object(*args, body)
    except ApiException as exc:
        if exc.status != 409:
            raise
        old = custom.get_namespaced_custom_object(*args, pod.name)
        body["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        custom.replace_namespaced_custom_object(*args, pod.name, body)
