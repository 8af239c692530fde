"""Where the API reads apps from: the host's app resources, LISTed once per kind and then
WATCHed (the reconciler's own watch cache), so a warm read makes no request at all, and
copies nothing either: the mappings are built again only after the watches saw a change
(at most every ``LAG_SECONDS``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any

from pincompile.contract import ANNOTATION_SOURCE, Labels
from reconciler.clients.cache import KindWatch
from reconciler.clients.connect import ClusterUnreachable, Connection
from reconciler.host import app_key, read_apps, spec_kinds, status_time
from reconciler.model import AppKey, Obj
from reconciler.status.document import APP_KINDS

LAG_SECONDS = 0.25
"""The mappings are built again at most this often: while a pass writes many statuses, a
read is at most this far behind the watches instead of copying the cache for each one."""


class HostApps:
    """Every app's status and labels on the host, kept current by one watch per app kind
    (an :class:`reconciler.api.index.AppSource`)."""

    def __init__(self, host: Connection) -> None:
        self._stop = threading.Event()
        # every app kind, served or not yet (the first pass installs the CRDs)
        self._watches = [KindWatch(host, kind, self._stop) for kind in spec_kinds()
                         if kind.kind in APP_KINDS]
        self._lock = threading.Lock()
        self._stamp: tuple[str, ...] | None = None
        self._built = 0.0
        self._statuses: Mapping[AppKey, Mapping[str, Any]] = {}
        self._labels: Mapping[AppKey, Labels] = {}
        for watch in self._watches:
            watch.thread.start()

    def wait_synced(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        for watch in self._watches:
            if not watch.synced.wait(max(0.0, deadline - time.monotonic())):
                raise ClusterUnreachable(f"host {watch.kind.kind}: the cache did not sync "
                                         f"({watch.error or 'timed out'})")

    def statuses(self) -> Mapping[AppKey, Mapping[str, Any]]:
        """Every app's status; the same mapping until a watch saw a change."""
        return self._current()[0]

    def labels(self) -> Mapping[AppKey, Labels]:
        """Every app's resource's labels (its spec's, and pincompile's own)."""
        return self._current()[1]

    def annotated(self, key: str) -> dict[AppKey, Mapping[str, str]]:
        """The annotations of every app resource that has annotation ``key``."""
        found: dict[AppKey, Mapping[str, str]] = {}
        for watch in self._watches:
            with watch.lock:
                for obj in watch.objects.values():
                    noted = (obj.get("metadata") or {}).get("annotations") or {}
                    if key in noted:
                        found[app_key(obj)] = dict(noted)
        return found

    def _current(self) -> tuple[Mapping[AppKey, Mapping[str, Any]], Mapping[AppKey, Labels]]:
        # each watch's resource version moves with every change it applies, after applying
        # it: read before the objects, a stamp never claims a change not yet copied
        stamp = tuple(watch.version for watch in self._watches)
        with self._lock:
            if stamp != self._stamp and time.monotonic() - self._built >= LAG_SECONDS:
                objects: list[Obj] = []
                for watch in self._watches:
                    with watch.lock:
                        objects += watch.objects.values()
                self._statuses, self._labels = statuses_and_labels(objects)
                self._stamp = stamp
                self._built = time.monotonic()
            return self._statuses, self._labels

    def close(self) -> None:
        self._stop.set()


class ListedApps:
    """Every app's status and labels on the host, LISTed when first asked (one request per
    app kind): the :class:`reconciler.api.index.AppSource` of a one-shot command, which
    must not start watches it would not use. With ``max_age`` (a command that watches,
    ``get -w``) they are LISTed again when asked after that many seconds."""

    def __init__(self, host: Connection, max_age: float | None = None) -> None:
        self.host, self.max_age = host, max_age
        self._lock = threading.Lock()
        self._listed = -1.0
        self._statuses: Mapping[AppKey, Mapping[str, Any]] = {}
        self._labels: Mapping[AppKey, Labels] = {}
        self._list()

    def _list(self) -> None:
        found = read_apps(self.host, [kind for kind in spec_kinds() if kind.kind in APP_KINDS])
        self._statuses, self._labels = statuses_and_labels(found.values())
        self._listed = time.monotonic()

    def _fresh(self) -> None:
        if self.max_age is not None and time.monotonic() - self._listed >= self.max_age:
            with self._lock:
                if time.monotonic() - self._listed >= self.max_age:
                    self._list()

    def statuses(self) -> Mapping[AppKey, Mapping[str, Any]]:
        self._fresh()
        return self._statuses

    def labels(self) -> Mapping[AppKey, Labels]:
        self._fresh()
        return self._labels


def statuses_and_labels(objects: Iterable[Obj]
                        ) -> tuple[dict[AppKey, Mapping[str, Any]], dict[AppKey, Labels]]:
    """Each app resource's status, with what the API's document of the app adds to it
    (:func:`with_resource`), and labels (its spec's, and pincompile's own)."""
    statuses: dict[AppKey, Mapping[str, Any]] = {}
    labels: dict[AppKey, Labels] = {}
    for obj in objects:
        key = app_key(obj)
        statuses[key] = with_resource(obj)
        labels[key] = (obj.get("metadata") or {}).get("labels") or {}
    return statuses, labels


def with_resource(obj: Obj) -> Mapping[str, Any]:
    """An app resource's status with ``statusTime`` (when it was written), ``spec`` and
    ``source`` (the spec's file): the fields of the API's document that are not in it."""
    meta = obj.get("metadata") or {}
    source = (meta.get("annotations") or {}).get(ANNOTATION_SOURCE)
    extra = {"statusTime": status_time(obj), "spec": obj.get("spec"), "source": source}
    return {**(obj.get("status") or {}), **{k: v for k, v in extra.items() if v}}
