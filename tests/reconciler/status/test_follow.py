"""The status follower's bookkeeping: many events of an app make one rewrite, a running
pass holds rewrites back, an app in a cluster this reconciler does not follow is left to
the passes. (The real thing, on a fleet: test_status_e2e.py and serve's e2e.)"""

from __future__ import annotations

import threading
import time
from typing import Any

from pincompile.manifest import LABEL_APP, LABEL_KIND, LABEL_PROJECT
from reconciler.status.follow import StatusFollower
from tests.support.clock import FakeClock
from tests.support.wait import wait_for

WEB = ("PinApp", "shop", "web")
KEY = ("apps/v1/Deployment", "shop", "web")


def _deployment(ready: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "generation": 1, "labels": {
                LABEL_APP: "web", LABEL_KIND: "PinApp", LABEL_PROJECT: "shop"}},
            "spec": {"replicas": 2},
            "status": {"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2,
                       "readyReplicas": ready, "availableReplicas": ready}}


class Fleet:
    """What the follower reads (a cluster's cached objects) and what it wrote."""

    def __init__(self, clusters: dict[str, Any]) -> None:
        self.clusters = clusters
        self.written: list[tuple[Any, dict[str, Any]]] = []
        self.wrote = threading.Event()

    def snapshot(self, name: str) -> Any:
        return self.clusters.get(name)

    def write(self, app: Any, doc: dict[str, Any]) -> None:
        self.written.append((app, doc))
        self.wrote.set()


def _follower(fleet: Fleet, statuses: dict[Any, Any], passing: threading.Lock
              ) -> StatusFollower:
    return StatusFollower(lambda: statuses, fleet.snapshot, fleet.write, passing, delay=0.3)


def test_many_events_make_one_rewrite_of_that_app() -> None:
    fleet = Fleet({"a": {KEY: _deployment(2)}})
    statuses = {WEB: {"phase": "Progressing", "ready": "0/2", "observedRevision": "r1",
                      "clusters": [{"name": "a"}]}}
    clock = FakeClock()
    follower = StatusFollower(lambda: statuses, fleet.snapshot, fleet.write,
                              threading.Lock(), delay=0.3, clock=clock)
    try:
        clock.settle()
        for ready in (0, 1, 2):
            follower.changed(_deployment(ready))
        follower.changed({"kind": "Namespace", "metadata": {"name": "shop"}})  # no app
        clock.advance(0.2)
        clock.settle()
        assert fleet.written == [], "written before the delay"
        clock.advance(0.1)
        clock.settle()
        [(app, doc)] = fleet.written
        assert app == WEB and doc["ready"] == "2/2" and doc["phase"] == "Healthy"
        assert statuses[WEB] is doc and follower.rewrites == 1
        follower.changed(_deployment(2))  # nothing new: no write
        clock.advance(10 * 0.3)
        clock.settle()
        assert len(fleet.written) == 1
    finally:
        follower.close()


def test_a_running_pass_holds_rewrites_back() -> None:
    fleet = Fleet({"a": {KEY: _deployment(2)}})
    statuses = {WEB: {"phase": "Progressing", "clusters": [{"name": "a"}]}}
    passing = threading.Lock()
    follower = _follower(fleet, statuses, passing)
    try:
        with passing:
            follower.changed(_deployment(2))
            assert not fleet.wrote.wait(1.0)
        assert fleet.wrote.wait(5)
    finally:
        follower.close()


def test_an_app_in_a_cluster_not_followed_here_is_left_to_the_passes() -> None:
    fleet = Fleet({"a": {KEY: _deployment(2)}})  # b is another shard's
    statuses = {WEB: {"phase": "Progressing", "clusters": [{"name": "a"}, {"name": "b"}]}}
    clock = FakeClock()
    follower = StatusFollower(lambda: statuses, fleet.snapshot, fleet.write,
                              threading.Lock(), delay=0.3, clock=clock)
    try:
        clock.settle()
        follower.changed(_deployment(2))
        clock.advance(10 * 0.3)  # well past its delay: it looked, and waits again
        clock.settle()
        assert not fleet.wrote.is_set()
    finally:
        follower.close()


def test_a_pass_that_wants_to_start_does_not_wait_for_a_long_batch_of_rewrites() -> None:
    """After serve's first pass every app's pods become Ready at once: the follower lets
    go between two writes when a pass waits, and writes the rest after it."""
    apps = [("PinApp", "shop", f"web-{i:02d}") for i in range(20)]
    deployments = {("apps/v1/Deployment", "shop", app[2]): _named(app[2]) for app in apps}
    statuses = {app: {"phase": "Progressing", "clusters": [{"name": "a"}]} for app in apps}
    passing, wanted = threading.Lock(), threading.Event()
    slow = Fleet({"a": deployments})
    written = slow.write

    def write(app: Any, doc: dict[str, Any]) -> None:
        time.sleep(0.1)  # 20 apps: 2 s of writes
        written(app, doc)

    slow.write = write  # type: ignore[method-assign]
    follower = StatusFollower(lambda: statuses, slow.snapshot, slow.write, passing,
                              wanted=wanted, delay=0.3)
    try:
        for obj in deployments.values():
            follower.changed(obj)
        assert slow.wrote.wait(5)
        wanted.set()
        started = time.monotonic()
        with passing:
            waited = time.monotonic() - started
            wanted.clear()
            during = len(slow.written)
            time.sleep(0.5)
            assert len(slow.written) == during, "no rewrite while the pass runs"
        assert waited < 0.5 and during < len(apps), (waited, during)
        wait_for(lambda: len(slow.written) >= len(apps), 10, "the rest written after the pass",
                 interval=0.05)
        assert sorted(app for app, _ in slow.written) == apps
    finally:
        follower.close()


def _named(name: str) -> dict[str, Any]:
    obj = _deployment(2)
    obj["metadata"] = {**obj["metadata"], "name": name,
                       "labels": {**obj["metadata"]["labels"], LABEL_APP: name}}
    return obj
