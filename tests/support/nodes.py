"""Watching a member cluster's nodes and an app's pods over time, for the remediation and
rotation end-to-end test and bench: what happened when, never sampled."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client as k8s
from kubernetes import watch


def _follow(list_call: Callable[..., Any], on_event: Callable[[str, dict[str, Any]], None],
            stop: threading.Event, **selector: Any) -> None:
    """LIST, then WATCH from there (again after a break) until ``stop``; each object as
    the API server sent it."""
    version = ""
    while not stop.is_set():
        try:
            if not version:
                listed = list_call(**selector, _preload_content=False)
                data = json.loads(listed.data)
                for item in data.get("items") or []:
                    on_event("LISTED", item)
                version = data["metadata"]["resourceVersion"]
            for event in watch.Watch().stream(list_call, resource_version=version,
                                              timeout_seconds=5, **selector):
                raw = event["raw_object"]
                version = raw["metadata"].get("resourceVersion") or version
                if event["type"] == "ERROR":
                    version = ""
                    break
                on_event(event["type"], raw)
                if stop.is_set():
                    return
        except Exception:  # a broken stream: list again
            version = ""
            stop.wait(0.2)


@dataclass
class NodeWatch:
    """Every change of a cluster's Nodes from now on: when each became unschedulable,
    how often each was deleted, which were created."""

    api: Any
    cordoned: dict[str, float] = field(default_factory=dict)
    uncordoned: dict[str, float] = field(default_factory=dict)
    deleted: dict[str, int] = field(default_factory=dict)
    created: list[str] = field(default_factory=list)
    names: set[str] = field(default_factory=set)
    marks: dict[str, list[tuple[float, str]]] = field(default_factory=dict)
    """Each node's remediation mark (``pincompute.io/remediation``) as it changed."""

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=_follow, daemon=True, args=(
            k8s.CoreV1Api(self.api).list_node, self._saw, self._stop))
        self._thread.start()
        self._ready.wait(30)

    def _saw(self, kind: str, node: dict[str, Any]) -> None:
        name = node["metadata"]["name"]
        with self._lock:
            if kind == "LISTED":
                self.names.add(name)
                self._ready.set()
                return
            if kind == "DELETED":
                self.deleted[name] = self.deleted.get(name, 0) + 1
                self.names.discard(name)
                return
            if kind == "ADDED" and name not in self.names:
                self.created.append(name)
            self.names.add(name)
            mark = ((node["metadata"].get("annotations") or {})
                    .get("pincompute.io/remediation") or "")
            seen = self.marks.setdefault(name, [])
            if not seen or seen[-1][1] != mark:
                seen.append((time.monotonic(), mark))
            if (node.get("spec") or {}).get("unschedulable"):
                self.cordoned.setdefault(name, time.monotonic())
            elif name in self.cordoned and name not in self.uncordoned:
                self.uncordoned[name] = time.monotonic()

    def phase_since(self, name: str, phase: str) -> float | None:
        """When ``name``'s remediation mark first said ``phase`` (None: not yet)."""
        with self._lock:
            return next((t for t, mark in self.marks.get(name, [])
                         if f'"phase": "{phase}"' in mark), None)

    def stop(self) -> None:
        self._stop.set()


@dataclass
class ReadyWatch:
    """The pods of one app (``selector``) in ``namespace``: how many are Ready and not
    terminating, after every change, and the fewest ever."""

    api: Any
    namespace: str
    selector: str
    fewest: int | None = None
    ready_now: int = 0
    nodes: dict[str, str] = field(default_factory=dict)
    """Each live pod's node."""

    def __post_init__(self) -> None:
        self._pods: dict[str, bool] = {}
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=_follow, daemon=True, args=(
            k8s.CoreV1Api(self.api).list_namespaced_pod, self._saw, self._stop),
            kwargs={"namespace": self.namespace, "label_selector": self.selector})
        self._thread.start()

    def _saw(self, kind: str, pod: dict[str, Any]) -> None:
        name = pod["metadata"]["name"]
        ready = not pod["metadata"].get("deletionTimestamp") and any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in (pod.get("status") or {}).get("conditions") or [])
        with self._lock:
            if kind == "DELETED":
                self._pods.pop(name, None)
                self.nodes.pop(name, None)
            else:
                self._pods[name] = ready
                self.nodes[name] = str((pod.get("spec") or {}).get("nodeName") or "")
            self.ready_now = sum(self._pods.values())
            if kind != "LISTED" or self.fewest is None:
                self.fewest = self.ready_now if self.fewest is None \
                    else min(self.fewest, self.ready_now)

    def reset(self) -> None:
        with self._lock:
            self.fewest = self.ready_now

    def stop(self) -> None:
        self._stop.set()


def events(api: Any, namespace: str, *, name: str | None = None,
           reason: str | None = None) -> list[Any]:
    """Events in ``namespace`` (of the object ``name``, with ``reason``), oldest first."""
    selectors = [f"involvedObject.name={name}"] if name else []
    if reason:
        selectors.append(f"reason={reason}")
    found = k8s.CoreV1Api(api).list_namespaced_event(
        namespace, field_selector=",".join(selectors) or None).items
    return sorted(found, key=lambda e: (e.metadata.creation_timestamp, e.metadata.name))
