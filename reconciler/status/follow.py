"""Between passes, each app's status on the host follows its member objects (``serve``).

The long-running reconciler's watch cache (one WATCH per cluster and kind) reports every
change of a managed object; :class:`StatusFollower` turns the changes into the apps they
belong to, waits ``delay`` seconds for more (debounced per app: one rewrite however many
events), computes each such app's status from the cache with the same health rules a pass
uses (:func:`reconciler.status.live.live_status`) and rewrites that app's status alone, only when
it differs. One thread; the set of apps waiting is bounded by the number of apps. While a
pass runs the follower waits for it: the pass writes the statuses it computed. A pass that
wants to start (``wanted``) does not wait for a long batch of rewrites (after serve's first
pass, every app's pods become Ready at once): the follower lets go between two writes and
takes the rest up after the pass.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Any

from kubernetes.dynamic.exceptions import DynamicApiError

from reconciler.clients.connect import ClusterUnreachable
from reconciler.clients.read import Key
from reconciler.model import AppKey, Obj
from reconciler.status.document import app_of, changed
from reconciler.status.live import live_status

DELAY = 1.0
"""Seconds from an app's first change to its status rewrite."""

Snapshot = Callable[[str], "dict[Key, Obj] | str | None"]
"""A member cluster's cached objects, why they cannot be read, or None: not followed here."""
Write = Callable[[AppKey, dict[str, Any]], None]


class StatusFollower:
    """Rewrites an app's host status when its member objects change (see the module)."""

    def __init__(self, statuses: Callable[[], dict[AppKey, dict[str, Any]]],
                 snapshot: Snapshot, write: Write, passing: threading.Lock, *,
                 wanted: threading.Event | None = None, delay: float = DELAY,
                 echo: Callable[[str], None] = lambda _m: None) -> None:
        self.statuses = statuses
        """The last status written per app (the last pass's, then ours): what we start from
        and compare with."""
        self.snapshot, self.write, self.passing = snapshot, write, passing
        self.wanted = wanted or threading.Event()
        """Set while a pass waits for ``passing``."""
        self.delay, self.echo = delay, echo
        self.rewrites = 0
        self._due: dict[AppKey, float] = {}
        self._wake = threading.Condition()
        self._stop = False
        self._thread = threading.Thread(target=self._run, daemon=True, name="status-follower")
        self._thread.start()

    def changed(self, obj: Obj) -> None:
        """A managed object changed in a member cluster (called from the watch threads)."""
        app = app_of(obj)
        if app is None:
            return
        with self._wake:
            if app not in self._due:
                self._due[app] = time.monotonic() + self.delay
                self._wake.notify()

    def close(self) -> None:
        with self._wake:
            self._stop = True
            self._wake.notify()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._stop and not self._ready():
                    wait = min(self._due.values(), default=time.monotonic() + 60) \
                        - time.monotonic()
                    self._wake.wait(max(wait, 0.05))
                if self._stop:
                    return
                now = time.monotonic()
                apps = [app for app, at in self._due.items() if at <= now]
            if not self.passing.acquire(timeout=self.delay):
                continue  # a pass is running: it writes every status; try again after
            try:
                with self._wake:
                    for app in apps:
                        self._due.pop(app, None)
                self._follow(apps)
            finally:
                self.passing.release()

    def _ready(self) -> bool:
        now = time.monotonic()
        return any(at <= now for at in self._due.values())

    def _follow(self, apps: list[AppKey]) -> None:
        """Recompute and rewrite ``apps``: each cluster's cache is read once per batch."""
        statuses = self.statuses()
        stored = {app: statuses[app] for app in apps if app in statuses}
        names = {str(c.get("name")) for doc in stored.values() for c in doc.get("clusters") or []}
        found = {name: self.snapshot(name) for name in sorted(names)}
        objects = _by_app(set(stored), found)
        ordered = sorted(stored.items())
        for done, (app, doc) in enumerate(ordered):
            if self.wanted.is_set():  # a pass waits: the rest after it
                self._later([a for a, _ in ordered[done:]])
                return
            placed = [str(c.get("name")) for c in doc.get("clusters") or []]
            seen = {name: found[name] for name in placed}
            readings = {name: got for name, got in seen.items() if got is not None}
            if len(readings) < len(seen):
                continue  # in a cluster another shard follows: its passes keep it current
            fresh = live_status(app, doc, objects.get(app, {}), readings)
            if not changed(doc, fresh):
                continue
            try:
                self.write(app, fresh)
            except (ClusterUnreachable, DynamicApiError, OSError) as exc:
                # the next change or pass writes it again
                self.echo(f"{'/'.join(app)}: status not rewritten: {exc}")
                continue
            statuses[app] = fresh
            self.rewrites += 1

    def _later(self, apps: list[AppKey]) -> None:
        with self._wake:
            for app in apps:
                self._due.setdefault(app, time.monotonic() + self.delay)


def _by_app(apps: set[AppKey], found: Mapping[str, dict[Key, Obj] | str | None]
            ) -> dict[AppKey, dict[str, list[tuple[Key, Obj]]]]:
    """The objects of ``apps`` in each cluster (one walk over each cluster's objects)."""
    out: dict[AppKey, dict[str, list[tuple[Key, Obj]]]] = defaultdict(lambda: defaultdict(list))
    for cluster, objects in found.items():
        if not isinstance(objects, dict):
            continue
        for key, obj in objects.items():
            app = app_of(obj)
            if app in apps:
                out[app][cluster].append((key, obj))
    return out
