"""A watch-based cache of what pincompile manages in one cluster, for long-running
reconcilers (``serve``): one LIST per kind to warm up, then WATCH from that list's
resourceVersion, so a warm cache answers every pass with no LIST at all.

A watch that ends is resumed from the last resourceVersion seen; one the server expired
(410 Gone) is re-listed, as client-go's reflector does.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable

from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import DynamicApiError, ResourceNotFoundError
from urllib3.exceptions import HTTPError

from reconciler import kinds
from reconciler.clients import read
from reconciler.clients.access import ClusterAccess, WatchEvent
from reconciler.clients.connect import ClusterUnreachable
from reconciler.clients.read import Key, key_of
from reconciler.kinds import KindInfo
from reconciler.model import Obj

WATCH_SECONDS = 240
log = logging.getLogger("pincompile.cache")
OnChange = Callable[[Obj], None]
"""Called (from the watch thread) with each object added, modified or deleted."""
Keep = Callable[[Obj], Obj | None]
"""What of an object a watch holds (a smaller copy), or None: the object is not held."""


class KindWatch:
    """One kind's objects, kept current by a LIST and then a WATCH in a thread."""

    def __init__(self, conn: ClusterAccess, kind: KindInfo, stop: threading.Event,
                 on_change: OnChange | None = None, *,
                 field_selector: str | None = None, label_selector: str | None = None,
                 keep: Keep | None = None) -> None:
        """Objects of ``kind`` that pincompile manages or, with ``field_selector`` or
        ``label_selector``, every object matching it, owned or not (Events of app
        resources, an app's pods); with ``keep``, what it keeps of each (the member
        Events of an app's kinds, without what nobody reads)."""
        self.conn, self.kind, self.stop = conn, kind, stop
        self.on_change, self.keep = on_change, keep
        self.field_selector, self.label_selector = field_selector, label_selector
        self.objects: dict[Key, Obj] = {}
        self.version = ""
        self.synced = threading.Event()
        self.error: str | None = None
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, daemon=True,
                                       name=f"watch-{conn.name}-{kind.kind}")

    def _relist(self) -> None:
        objects, version = read.list_managed(self.conn, self.kind,
                                             field_selector=self.field_selector,
                                             label_selector=self.label_selector)
        if self.keep is not None:
            objects = {k: kept for k, o in objects.items() if (kept := self.keep(o)) is not None}
        with self.lock:
            self.objects, self.version = objects, version
        self.synced.set()

    def _run(self) -> None:
        backoff = 0.5
        while not self.stop.is_set():
            try:
                if not self.version:
                    self._relist()
                self._watch()
                backoff = 0.5
            except DynamicApiError as exc:
                if exc.status == 410:
                    self.version = ""
                    continue
                if exc.status == 404:  # discovery (cached on disk) named a kind not served
                    self._not_served()
                else:
                    self.error = str(exc.summary())
            except ResourceNotFoundError:
                # not served (yet): a CRD the first pass installs. Nothing there, so far;
                # look again (discovery afresh) after the back-off
                self._not_served()
            except ApiException as exc:
                if exc.status == 410:
                    self.version = ""
                    continue
                self.error = f"{exc.status} {exc.reason}"
            except (ClusterUnreachable, OSError, ValueError, HTTPError) as exc:
                # HTTPError: the stream broke (an API server restarted): watch again
                self.error = str(exc)
            except Exception as exc:  # a bug: say so, but never leave the cache stale
                log.exception("watch of %s in %s", self.kind.kind, self.conn.name)
                self.error = f"{type(exc).__name__}: {exc}"
            self.stop.wait(backoff)
            backoff = min(backoff * 2, 10.0)

    def _not_served(self) -> None:
        """Nothing of this kind there, so far (a CRD the first pass installs, or a kind a
        stale discovery cache named): the cache is synced without it, and looks again
        (discovery afresh) after the back-off."""
        self.error = f"{self.kind.kind} is not served (yet)"
        with self.lock:
            self.objects, self.version = {}, ""
        self.synced.set()
        with contextlib.suppress(Exception):  # the next attempt says what is wrong
            self.conn.rediscover()

    def _watch(self) -> None:
        explicit = bool(self.field_selector or self.label_selector)
        stream = self.conn.watch(
            self.kind, **read.selector(self.field_selector, self.label_selector, self.kind),
            resource_version=self.version, timeout_seconds=WATCH_SECONDS)
        try:
            for event in stream:
                if self.stop.is_set():
                    return
                if not self._take(event, explicit):
                    return
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()
        self.error = None

    def _take(self, event: WatchEvent, explicit: bool) -> bool:
        """Keep one event's object; False when the watch must start over (410 Gone)."""
        raw = event["object"]
        kind = event["type"]
        if kind == "ERROR":
            if raw.get("code") == 410:
                self.version = ""
                return False
            raise ValueError(str(raw.get("message", "watch error")))
        version = (raw.get("metadata") or {}).get("resourceVersion")
        if kind != "BOOKMARK" and read.ours(raw, explicit):
            raw.setdefault("apiVersion", self.kind.api_version)
            raw.setdefault("kind", self.kind.kind)
            kept = raw if self.keep is None or kind == "DELETED" else self.keep(raw)
            with self.lock:
                if kind == "DELETED" or kept is None:
                    self.objects.pop(key_of(raw), None)
                else:
                    self.objects[key_of(raw)] = kept
            if self.on_change is not None:
                self.on_change(raw)
        if version:
            self.version = str(version)
        return True


class ClusterCache:
    """Every managed kind of one cluster (or the ``watched`` kinds: the host's resources),
    watched."""

    def __init__(self, conn: ClusterAccess, on_change: OnChange | None = None,
                 watched: Iterable[KindInfo] = kinds.MANAGED_KINDS) -> None:
        self.conn = conn
        self.stop = threading.Event()
        self.watches = [KindWatch(conn, k, self.stop, on_change) for k in watched
                        if read.served(conn, k)]
        for watch in self.watches:
            watch.thread.start()

    def snapshot(self, timeout: float = 60.0) -> dict[Key, Obj]:
        """Every managed object, once each kind has listed at least once."""
        deadline = time.monotonic() + timeout
        out: dict[Key, Obj] = {}
        for watch in self.watches:
            if not watch.synced.wait(max(0.0, deadline - time.monotonic())):
                raise ClusterUnreachable(f"{watch.kind.kind}: the cache did not sync "
                                         f"({watch.error or 'timed out'})")
            with watch.lock:
                out.update(watch.objects)
        return out

    def close(self) -> None:
        self.stop.set()
