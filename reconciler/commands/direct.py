"""The PinCompute API run inside a one-shot command, for ``get|logs|exec|events|history``
and the actions without ``--server``: the same ASGI app and gateway ``serve`` runs, on a
loopback port only this process knows a token for, reading the clusters with the
kubeconfig's own credentials (so their API servers authorize every request), with
sources that LIST once instead of warming watches. The command then talks to it with the
same :class:`~reconciler.api.client.ApiClient` it uses against a server."""

from __future__ import annotations

import asyncio
import hmac
import logging
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, cast

import uvicorn

from reconciler.api.access import AccessError, Caller, RateLimits
from reconciler.api.app import Gateway, create_app
from reconciler.api.client import ApiClient
from reconciler.api.pods import ListedPods
from reconciler.api.sources import ListedApps
from reconciler.api.timeline import ClustersTimeline
from reconciler.clients.connect import Connection
from reconciler.insight.live import ListedInsight
from reconciler.status.live import member_contexts
from reconciler.store import Discarded

if TYPE_CHECKING:
    from reconciler.store import Store

START_SECONDS = 10.0


class KubeconfigAccess:
    """The one caller is this process (holding ``token``), acting as the kubeconfig's
    user: every call is allowed here, because each request it makes to a cluster carries
    the kubeconfig's credentials and that cluster's RBAC decides."""

    def __init__(self, token: str, user: str) -> None:
        self.token, self.user = token, user

    def authenticate(self, token: str) -> Caller:
        if not hmac.compare_digest(token.encode(), self.token.encode()):
            raise AccessError(401, "not this process's token")
        return Caller(self.user)

    def allowed(self, caller: Caller, action: str, kind: str, project: str) -> bool:
        return caller.user == self.user


@contextmanager
def direct_api(kubeconfig: str | None, host_context: str, store_url: str | None,
               timeout: float, max_age: float | None = None
               ) -> Iterator[tuple[ApiClient, Gateway]]:
    """A client of the API served in this process from the clusters of ``kubeconfig``
    (the host's apps LISTed now: ``ClusterUnreachable`` and ``DynamicApiError`` when it
    cannot be read) and the insight store ``serve`` keeps at ``store_url`` (None: a
    throwaway one; ``NoSuchStore`` when there is none there). Events are read from the
    clusters too."""
    with ExitStack() as stack:
        if store_url is None:  # nothing kept: no database (nor SQLAlchemy) at all
            store = cast("Store", Discarded())
        else:
            from reconciler.store import Store

            store = Store.open(store_url, create=False)
        stack.callback(store.close)
        host = Connection("host", host_context, kubeconfig)
        stack.callback(host.close)
        apps = ListedApps(host, max_age)
        pods = ListedPods(kubeconfig, lambda: member_contexts(host))
        stack.callback(pods.close)
        token = secrets.token_urlsafe(32)
        gateway = Gateway(apps=apps, store=store, host=host, pods=pods,
                          access=KubeconfigAccess(token, f"kubeconfig:{host_context}"),
                          limits=RateLimits(1000, 1000),
                          insight=ListedInsight(host, kubeconfig),
                          timeline=ClustersTimeline(host, pods.connect),
                          store_read=store_url is not None)
        url = stack.enter_context(_served(gateway))
        yield ApiClient(url, token, timeout=timeout, in_process=True), gateway


QUIET_LOGGERS = ("uvicorn", "pincompile.api")
"""What the API served in this process logs: a server's, which the user did not start
(its failures reach the command as answers, said in the command's words)."""


@contextmanager
def _served(gateway: Gateway) -> Iterator[str]:
    """The gateway's API on 127.0.0.1 (a port of the kernel's choice), in a thread, its
    logs kept from the terminal."""
    for name in QUIET_LOGGERS:
        quiet = logging.getLogger(name)
        quiet.addHandler(logging.NullHandler())
        quiet.propagate = False
    sock = socket.create_server(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(create_app(gateway), lifespan="off",
                                           access_log=False, log_config=None,
                                           log_level=logging.CRITICAL + 1,
                                           timeout_graceful_shutdown=1))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])),
                              daemon=True, name="direct-api")
    thread.start()
    deadline = time.monotonic() + START_SECONDS
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.005)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        # the command has its answers: connections still open (an idle keep-alive, a log
        # stream Ctrl-C cut) are not waited for
        server.should_exit = server.force_exit = True
        thread.join(START_SECONDS)
        sock.close()


def wait_idle(gateway: Gateway, app: tuple[str, str, str], timeout: float) -> bool:
    """Wait until no action on ``app`` runs in this process; False when it still does."""
    deadline = time.monotonic() + timeout
    while gateway.operations.running(app):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True
