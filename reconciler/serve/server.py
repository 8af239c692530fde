"""The HTTP side of ``serve``: webhooks in, health, readiness, metrics and status out,
and the PinCompute API (``reconciler/api``) on the same ASGI app.

=========================  ======  ==================================================
path                       method  answer
=========================  ======  ==================================================
``/webhooks/<provider>``   POST    202 queued, 200 ping/ignored, 401, 403, 404, 408,
                                   409, 411, 413, 400
``/healthz``               GET     200 while the process runs
``/readyz``                GET     200 ready / 503 not yet (the reason in the body)
``/metrics``               GET     Prometheus text format (401/403 unless the host
                                   authorizes the caller, or the status token, or
                                   ``--open-status``: :mod:`~reconciler.serve.status_access`)
``/status``                GET     JSON: ``apps`` (``pincompile status -o json``) and
                                   ``serve`` (leadership, last applied revision, last
                                   pass); closed like ``/metrics``
``/api/v1/...``            GET     the PinCompute API (docs/api)
``/``, ``/apps/...``       GET     the web console (docs/console.md); ``/login`` and
                                   ``/logout`` POST, ``/static/`` its assets
=========================  ======  ==================================================

Served by uvicorn on one event loop: a slow or idle client holds a coroutine, never a
thread; a request head must be complete within ``read_timeout`` seconds of the
connection's start (or of its last answer), and one client address holds at most
``per_client`` connections (:mod:`~reconciler.serve.guard`); a webhook body must arrive
within ``read_timeout`` seconds per chunk (408 and the connection closed otherwise) and
is refused with 413 when it announces or sends more than the limit. Blocking work
(judging a webhook, reading status) runs in a bounded pool. ``X-Forwarded-For`` and
``X-Forwarded-Proto`` count only from the configured proxies.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from fastapi import FastAPI, Request, Response
from fastapi.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from reconciler.api.app import Gateway, create_app
from reconciler.console.members import MemberSource
from reconciler.console.routes import mount_console
from reconciler.serve.documents import AppStatusReader
from reconciler.serve.guard import ClientGuard, GuardedConfig, Network
from reconciler.serve.metrics import CONTENT_TYPE
from reconciler.serve.redact import redact_data
from reconciler.serve.service import Service
from reconciler.serve.status_access import StatusAccess, status_refusal
from reconciler.serve.webhooks import DEFAULT_MAX_BODY, PROVIDERS, Deliveries, Verdict, judge
from reconciler.slo.console import add_slo_page
from reconciler.slo.http import MeasuredAPI
from reconciler.slo.serving import SLOService

log = logging.getLogger("pincompile.serve.http")
_TEXT = "text/plain; charset=utf-8"


@dataclass
class WebhookConfig:
    """The shared secret (``None``: every webhook is refused), branch and body limit."""

    secret: bytes | None
    branch: str
    max_body: int = DEFAULT_MAX_BODY
    deliveries: Deliveries = field(default_factory=Deliveries)
    """Deliveries seen lately: a replay within the window is refused."""


@dataclass(frozen=True)
class HTTPLimits:
    """What clients may cost: seconds to send a request head, and without a byte of a
    request body, before the connection is closed (a body: after a 408); open
    connections, and per client address; request header bytes. Connections from
    ``proxies`` are not bounded per address, and only theirs may say who the client is
    (``X-Forwarded-For``) and how it came (``X-Forwarded-Proto``)."""

    read_timeout: int = 10
    connections: int = 4000
    per_client: int = 200
    header_bytes: int = 64 * 1024
    proxies: tuple[Network, ...] = ()


class ServeHTTPServer:
    """The HTTP server of one ``serve`` process: :meth:`serve_forever` in a thread,
    :meth:`shutdown` from another."""

    def __init__(self, address: tuple[str, int], service: Service, hooks: WebhookConfig,
                 repo: str, apps: AppStatusReader | None = None, *,
                 status: StatusAccess | None = None, limits: HTTPLimits | None = None,
                 gateway: Gateway | None = None, members: MemberSource | None = None,
                 slo: SLOService | None = None) -> None:
        self.service, self.hooks, self.repo, self.apps = service, hooks, repo, apps
        self.status = status or StatusAccess()
        """Who may read ``/status`` and ``/metrics``."""
        self.gateway = gateway
        self.limits = limits = limits or HTTPLimits()
        self.app = create_app(gateway)
        self.app.state.slo = slo
        self.app.router.redirect_slashes = False  # its redirect would name the Host header
        self._routes(self.app)
        mount_console(self.app, members=members, repo=repo)
        add_slo_page(self.app)
        self._socket = socket.create_server(address, backlog=1024)
        measured = MeasuredAPI(self.app, slo.slis) if slo is not None else self.app
        front = BoundedBody(measured, hooks.max_body, limits.read_timeout, self._refused)
        self.guard = ClientGuard(limits.per_client, limits.read_timeout, limits.proxies)
        self._server = uvicorn.Server(GuardedConfig(
            front, self.guard, lifespan="off", access_log=False, log_level="warning",
            limit_concurrency=limits.connections, server_header=False,
            h11_max_incomplete_event_size=limits.header_bytes,
            timeout_keep_alive=limits.read_timeout, timeout_graceful_shutdown=5,
            proxy_headers=bool(limits.proxies),
            forwarded_allow_ips=[str(n) for n in limits.proxies]))
        self._stopped = threading.Event()

    @property
    def server_address(self) -> tuple[str, int]:
        host, port = self._socket.getsockname()[:2]
        return str(host), int(port)

    def serve_forever(self) -> None:
        try:
            asyncio.run(self._server.serve(sockets=[self._socket]))
        finally:
            self._stopped.set()

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop accepting and give requests in flight up to ``timeout`` seconds; then stop
        regardless."""
        self._server.should_exit = True
        if not self._stopped.wait(timeout):
            self._server.force_exit = True
            self._stopped.wait(1.0)

    def server_close(self) -> None:
        self._socket.close()

    # -- routes ---------------------------------------------------------------------------
    def _routes(self, app: FastAPI) -> None:
        service = self.service

        @app.get("/healthz", include_in_schema=False)
        async def healthz() -> Response:
            return Response("ok\n", media_type=_TEXT)

        @app.get("/readyz", include_in_schema=False)
        async def readyz() -> Response:
            ready, reason = service.ready()
            return Response(reason + "\n", 200 if ready else 503, media_type=_TEXT)

        @app.get("/metrics", include_in_schema=False)
        async def metrics(request: Request) -> Response:
            refused = await status_refusal(request, self.status, self.gateway)
            if refused is not None:
                return refused
            return Response(service.metrics.exposition(), media_type=CONTENT_TYPE)

        @app.get("/status", include_in_schema=False)
        async def status(request: Request) -> Response:
            refused = await status_refusal(request, self.status, self.gateway)
            if refused is not None:
                return refused
            document = await run_in_threadpool(status_document, service, self.repo,
                                               self.hooks.branch, self.apps)
            return Response(json.dumps(document, indent=2) + "\n",
                            media_type="application/json")

        @app.api_route("/webhooks/{provider}", methods=["GET", "POST"],
                       include_in_schema=False)
        async def webhook(provider: str, request: Request) -> Response:
            if request.method != "POST":
                return Response("webhooks are POSTed\n", 405, media_type=_TEXT)
            verdict = await self._webhook(provider, request)
            if provider in PROVIDERS:
                service.metrics.webhooks.labels(provider, verdict.result).inc()
            if verdict.push is not None:
                service.pushed(verdict.push.after, verdict.push.delivery)
            log.info("webhook %s: %d %s", provider, verdict.status, verdict.message)
            answer = {"result": verdict.result, "message": verdict.message}
            return Response(json.dumps(answer, indent=2) + "\n", verdict.status,
                            media_type="application/json")

    def _refused(self, path: str, status: int) -> None:
        provider = path.removeprefix("/webhooks/").strip("/")
        if path.startswith("/webhooks/") and provider in PROVIDERS:
            self.service.metrics.webhooks.labels(
                provider, "too_large" if status == 413 else "bad_request").inc()
        log.info("%s: %d (refused before the app)", path, status)

    async def _webhook(self, provider: str, request: Request) -> Verdict:
        hooks = self.hooks
        length = request.headers.get("content-length", "")
        if not length.isdigit():
            return Verdict(411, "bad_request", "a Content-Length header is required")
        body = await request.body()  # whole and within limits: see BoundedBody
        headers = {key.lower(): value for key, value in request.headers.items()}
        return await run_in_threadpool(judge, provider, headers, body, hooks.secret,
                                       hooks.branch, repo=self.repo,
                                       deliveries=hooks.deliveries)


class BoundedBody:
    """ASGI front for request bodies: refuse one announced or sent over ``max_body`` (413),
    or one whose next chunk takes over ``timeout`` seconds (408), answering from here and
    closing the connection; otherwise hand the app the whole body at once. A slow client
    so never reaches the app (or a thread), and costs a coroutine."""

    def __init__(self, app: ASGIApp, max_body: int, timeout: float,
                 on_refused: Callable[[str, int], None]) -> None:
        self.app, self.max_body, self.timeout, self.on_refused = (app, max_body, timeout,
                                                                  on_refused)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        length = headers.get(b"content-length", b"")
        if length.isdigit() and int(length) > self.max_body:
            await self._refuse(scope, send, 413, f"the body is over {self.max_body} bytes")
            return
        body = bytearray()
        more = True
        while more:
            try:
                message = await asyncio.wait_for(receive(), self.timeout)
            except TimeoutError:
                await self._refuse(scope, send, 408, f"no byte of the body for {self.timeout:g}s")
                return
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.max_body:
                await self._refuse(scope, send, 413, f"the body is over {self.max_body} bytes")
                return
        replayed = False

        async def whole_body() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": bytes(body), "more_body": False}

        await self.app(scope, whole_body, send)

    async def _refuse(self, scope: Scope, send: Send, status: int, message: str) -> None:
        self.on_refused(scope["path"], status)
        answer = (json.dumps({"result": "too_large" if status == 413 else "bad_request",
                              "message": message}, indent=2) + "\n").encode()
        await send({"type": "http.response.start", "status": status, "headers": [
            (b"content-type", b"application/json"), (b"connection", b"close"),
            (b"content-length", str(len(answer)).encode())]})
        await send({"type": "http.response.body", "body": answer})


def status_document(service: Service, repo: str, branch: str,
                    apps: AppStatusReader | None = None) -> dict[str, Any]:
    """What ``GET /status`` answers: ``apps`` is the document ``pincompile status -o json``
    prints (read from the host; null when it cannot be read, with ``serve.appsError``),
    ``serve`` this process's own state."""
    rows, error = apps.read() if apps is not None else (None, "no host cluster configured")
    document = serve_document(service, repo, branch)
    if error is not None:
        document["appsError"] = error
    return {"apps": rows, "serve": redact_data(document)}


def serve_document(service: Service, repo: str, branch: str) -> dict[str, Any]:
    """``/status``'s ``serve`` part: leadership, readiness, the last pass."""
    state = service.state
    ready, reason = service.ready()
    applied = None
    if state.last_applied is not None:
        applied = {"revision": state.last_applied["revision"],
                   "finished": state.last_applied["finished"],
                   "age_seconds": round(service.clock() - state.last_applied["time"], 1)}
    pending = service.coalescer.pending()
    return {
        "identity": service.identity, "repo": repo, "branch": branch,
        "shards": service.shards, "leading": sorted(state.leading),
        "ready": ready, "reason": reason, "busy": state.busy_since is not None,
        "passRunningSeconds": _rounded(service.running_for()),
        "passDeadlineSeconds": service.pass_deadline,
        "pending": None if pending is None else {"reason": pending.reason,
                                                 "revision": pending.revision},
        "lastApplied": applied, "lastPass": state.last_pass,
    }


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 1)


def parse_listen(listen: str) -> tuple[str, int]:
    """``HOST:PORT`` (or ``:PORT`` for every interface) → an address to bind."""
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"--listen must look like 127.0.0.1:8080 or :8080, not '{listen}'")
    return host.strip("[]") or "0.0.0.0", int(port)
