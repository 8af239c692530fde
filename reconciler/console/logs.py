"""The app page's logs: which of an app's containers a user picked (cluster, container, a
text filter, lines of tail) and their merged lines, read the way the API's logs route
reads them (:class:`reconciler.api.logs.MergedLogs` through the member API servers,
under the same per-user bound on open streams).

Two readings: a follow stream (plain text, one line each, for the page's script) and the
last lines at once (for the page without JavaScript), cut at ``STATIC_LINES`` lines and
``STATIC_SECONDS``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, replace

from fastapi import HTTPException
from fastapi.concurrency import run_in_threadpool

from reconciler.api.app import Gateway, app_pods
from reconciler.api.logs import LogQuery, MergedLogs, TooMany, log_targets, pod_log_opener
from reconciler.model import AppKey

TAIL_DEFAULT = 100
TAIL_MAX = 1000
TEXT_MAX = 200
"""Characters of a filter value kept (a longer one is cut)."""
STATIC_LINES = 2000
STATIC_SECONDS = 10.0


@dataclass(frozen=True)
class LogFilter:
    """What the logs panel's form asks for; empty: every cluster, every container."""

    cluster: str = ""
    container: str = ""
    text: str = ""
    tail: int = TAIL_DEFAULT

    @classmethod
    def parse(cls, params: Mapping[str, str]) -> LogFilter:
        """From query parameters; an odd tail (``x``, a million) is the default or the
        most, never an error."""
        def value(name: str) -> str:
            return str(params.get(name, "")).strip()[:TEXT_MAX]

        tail = value("tail")
        return cls(cluster=value("cluster"), container=value("container"), text=value("q"),
                   tail=min(int(tail), TAIL_MAX) if tail.isdigit() else TAIL_DEFAULT)

    def query(self, *, follow: bool) -> LogQuery:
        return LogQuery(container=self.container or None, tail_lines=self.tail,
                        follow=follow, cluster=self.cluster or None)

    def keeps(self, line: bytes) -> bool:
        """The line matches the text filter (case-insensitive), or there is none."""
        return not self.text or self.text.lower() in line.decode("utf-8", "replace").lower()


async def open_logs(gateway: Gateway, user: str, app: AppKey, chosen: LogFilter, *,
                    follow: bool, seconds: float | None = None,
                    still_allowed: Callable[[], Awaitable[bool]] | None = None) -> MergedLogs:
    """The merged logs of the containers ``chosen`` picks, holding one of ``user``'s
    stream slots until closed (:func:`lines`), ended when ``still_allowed`` (asked every
    ``recheck_seconds``) says no more. HTTPException: 404 (no app, no container
    matches), 400 (too many containers), 429 (no slot free), 503 (no member cluster)."""
    query = chosen.query(follow=follow)
    try:
        targets = log_targets(await run_in_threadpool(app_pods, gateway, app), query,
                              gateway.log_limits.containers)
    except TooMany as exc:
        raise HTTPException(400, str(exc)) from None
    if not targets:
        raise HTTPException(404, f"no container of {'/'.join(app)} matches")
    if not gateway.log_streams.take(user):
        raise HTTPException(429, f"{user} has {gateway.log_limits.streams_per_user} log "
                                 "streams open already: close one (another tab?)",
                            headers={"Retry-After": "5"})
    assert gateway.pods is not None  # app_pods said so
    limits = gateway.log_limits if seconds is None else replace(gateway.log_limits,
                                                                seconds=seconds)
    return MergedLogs(targets, pod_log_opener(gateway.pods.connection, query, limits.seconds),
                      limits, still_allowed)


async def lines(gateway: Gateway, user: str, merged: MergedLogs, chosen: LogFilter,
                most: int | None = None) -> AsyncIterator[bytes]:
    """The lines ``chosen`` keeps, at most ``most``; closes ``merged`` and gives the
    stream slot back when done or abandoned."""
    count = 0
    try:
        async for line in merged.lines():
            if line.startswith(b"# ") or chosen.keeps(line):
                yield line
                count += 1
                if most is not None and count >= most:
                    return
    finally:
        merged.close()
        gateway.log_streams.give_back(user)


async def last_lines(gateway: Gateway, user: str, app: AppKey, chosen: LogFilter) -> list[str]:
    """The last ``chosen.tail`` lines of each picked container, at once."""
    merged = await open_logs(gateway, user, app, chosen, follow=False, seconds=STATIC_SECONDS)
    return [line.decode("utf-8", "replace").rstrip("\n")
            async for line in lines(gateway, user, merged, chosen, STATIC_LINES)]
