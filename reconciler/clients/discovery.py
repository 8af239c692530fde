"""The dynamic client's discovery, made cheap for kinds a cluster does not serve.

The client's ``LazyDiscoverer`` answers every lookup it cannot satisfy by discovering the
whole cluster again and rewriting its cache file — for each unserved kind asked (kubeflow
kinds where kubeflow is not installed), in every pass, most of the CPU in ``json.dump``,
which encodes in Python (bench/RESULTS.md, Tuning). This discoverer re-discovers on a
miss once; for a minute after that, a kind whose group and version the cluster does not
serve is not found at once (then a miss looks again: a CRD may have been installed
since), and the cache file is written in one piece by the C encoder (and atomically:
processes share it).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import threading
import time
from typing import Any

from kubernetes.dynamic.discovery import CacheEncoder, LazyDiscoverer

TRUSTED_SECONDS = 60.0
"""How long a fresh discovery's "not served" is trusted."""


def cache_path(host: str) -> str:
    """The client's own cache file for ``host`` (the same name its discoverer picks)."""
    digest = hashlib.md5(host.encode("utf-8"), usedforsecurity=False).hexdigest()
    return os.path.join(tempfile.gettempdir(), f"osrcp-{digest}.json")


class Discoverer(LazyDiscoverer):
    """``LazyDiscoverer`` that trusts a fresh discovery's "not served"."""

    def __init__(self, client: Any, cache_file: str | None) -> None:
        self.path = cache_file or cache_path(client.configuration.host)
        self.discovered = float("-inf")
        """When this process last discovered the cluster afresh (not from the cache file)."""
        super().__init__(client, self.path)
        if self.discovered == float("-inf") and not self._matches_server():
            self.invalidate_cache()

    def _matches_server(self) -> bool:
        """Whether the cache's API groups and versions are the ones the cluster serves now
        (one request). The file is kept per address: one written for another cluster that
        once had the same address (a port reused, a tunnel) names kinds this one may not
        serve, and their LISTs would answer 404 as if the cluster were broken."""
        served = {(str(group["name"]), str(version["version"]))
                  for group in self.client.request("GET", "/apis").groups
                  for version in group["versions"]}
        cached = {(group, version)
                  for group, versions in ((self._cache.get("resources") or {})
                                          .get("apis") or {}).items()
                  for version in versions}
        return served == cached

    def invalidate_cache(self) -> None:
        super().invalidate_cache()
        self.discovered = time.monotonic()

    def search(self, **kwargs: Any) -> Any:  # type: ignore[override]  # as LazyDiscoverer
        api_version = kwargs.get("api_version")
        fresh = time.monotonic() - self.discovered < TRUSTED_SECONDS
        if fresh and api_version and not self._serves(str(api_version)):
            return []
        return super().search(**kwargs)

    def _serves(self, api_version: str) -> bool:
        """Whether the discovered groups include ``api_version`` (no request)."""
        group, _, version = api_version.rpartition("/")
        groups = self.parse_api_groups(request_resources=False)
        return version in (groups.get("apis" if group else "api") or {}).get(group, {})

    def _write_cache(self) -> None:
        with contextlib.suppress(Exception):  # as the client's: a cache it may not write
            text = json.dumps(self._cache, cls=CacheEncoder)
            partial = f"{self.path}.{os.getpid()}.{threading.get_ident()}"
            with open(partial, "w", encoding="utf-8") as out:
                out.write(text)
            os.replace(partial, self.path)
