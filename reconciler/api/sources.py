"""Where the API reads apps from: the host's app resources, LISTed once per kind and then
WATCHed (the reconciler's own watch cache), so a warm read makes no request at all."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

from reconciler.cache import KindWatch
from reconciler.clients.connect import ClusterUnreachable, Connection
from reconciler.host import app_key, spec_kinds
from reconciler.status_document import APP_KINDS, AppKey


class HostApps:
    """Every app's status on the host, kept current by one watch per app kind."""

    def __init__(self, host: Connection) -> None:
        self._stop = threading.Event()
        # every app kind, served or not yet (the first pass installs the CRDs)
        self._watches = [KindWatch(host, kind, self._stop) for kind in spec_kinds()
                         if kind.kind in APP_KINDS]
        for watch in self._watches:
            watch.thread.start()

    def wait_synced(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        for watch in self._watches:
            if not watch.synced.wait(max(0.0, deadline - time.monotonic())):
                raise ClusterUnreachable(f"host {watch.kind.kind}: the cache did not sync "
                                         f"({watch.error or 'timed out'})")

    def statuses(self) -> Mapping[AppKey, Mapping[str, Any]]:
        out: dict[AppKey, Mapping[str, Any]] = {}
        for watch in self._watches:
            with watch.lock:
                objects = list(watch.objects.values())
            for obj in objects:
                out[app_key(obj)] = obj.get("status") or {}
        return out

    def close(self) -> None:
        self._stop.set()
