"""The HTTP side of ``serve``: webhooks in, health, readiness, metrics and status out.

=========================  ======  ==================================================
path                       method  answer
=========================  ======  ==================================================
``/webhooks/<provider>``   POST    202 queued, 200 ping/ignored, 401, 403, 409, 411,
                                   413, 400
``/healthz``               GET     200 while the process runs
``/readyz``                GET     200 ready / 503 not yet (the reason in the body)
``/metrics``               GET     Prometheus text format (401 without the bearer token
                                   when one is configured)
``/status``                GET     JSON: ``apps`` (``pincompile status -o json``) and
                                   ``serve`` (leadership, last applied revision, last
                                   pass); 401 without the bearer token when configured
=========================  ======  ==================================================

Served by waitress: one I/O thread reads every request in full (headers and body, each
connection dropped after ``read_timeout`` seconds without a byte, bodies over the webhook
limit refused with 413 before they are read) and only then hands it to one of ``threads``
workers, so slow or idle clients hold a socket, never a thread.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from waitress.channel import HTTPChannel
from waitress.server import TcpWSGIServer
from waitress.task import ErrorTask

from reconciler.serve.metrics import CONTENT_TYPE
from reconciler.serve.redact import redact_data
from reconciler.serve.service import Service
from reconciler.serve.status import AppStatusReader
from reconciler.serve.webhooks import DEFAULT_MAX_BODY, PROVIDERS, Deliveries, Verdict, judge

log = logging.getLogger("pincompile.serve.http")
StartResponse = Callable[[str, list[tuple[str, str]]], Any]
_REASONS = {200: "OK", 202: "Accepted", 400: "Bad Request", 401: "Unauthorized",
            403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed", 409: "Conflict",
            411: "Length Required", 413: "Content Too Large", 415: "Unsupported Media Type",
            503: "Service Unavailable"}


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
    """What one client may cost: seconds without a byte before its connection is dropped,
    worker threads, open connections, request header bytes."""

    read_timeout: int = 10
    threads: int = 8
    connections: int = 1000
    header_bytes: int = 64 * 1024


class _RefusalTask(ErrorTask):
    """waitress's answer to a request it refused before the app saw it (a body over the
    limit: 413), counted in the webhook metrics like the app's own refusals."""

    def execute(self) -> None:
        on_refused = getattr(self.channel.server, "on_refused", None)
        if on_refused is not None:
            on_refused(self.request.path or "", self.request.error.code)
        super().execute()


class _Channel(HTTPChannel):
    error_task_class = _RefusalTask


class _Server(TcpWSGIServer):
    channel_class = _Channel


class ServeHTTPServer:
    """The HTTP server of one ``serve`` process: :meth:`serve_forever` in a thread,
    :meth:`shutdown` from another."""

    def __init__(self, address: tuple[str, int], service: Service, hooks: WebhookConfig,
                 repo: str, apps: AppStatusReader | None = None, *,
                 status_token: bytes | None = None, limits: HTTPLimits | None = None
                 ) -> None:
        self.service = service
        self.hooks = hooks
        self.repo = repo
        self.apps = apps
        self.status_token = status_token
        """When set, ``/status`` and ``/metrics`` need ``Authorization: Bearer <token>``."""
        limits = limits or HTTPLimits()
        server = _Server(
            self.app, host=address[0], port=address[1], threads=limits.threads,
            channel_timeout=limits.read_timeout, cleanup_interval=1,
            connection_limit=limits.connections, max_request_header_size=limits.header_bytes,
            max_request_body_size=hooks.max_body, ident="pincompile-serve",
            asyncore_use_poll=True, clear_untrusted_proxy_headers=False,
            expose_tracebacks=False)
        self._server = server
        server.on_refused = self._refused  # type: ignore[attr-defined]

    @property
    def server_address(self) -> tuple[str, int]:
        return str(self._server.effective_host), int(self._server.effective_port)

    def serve_forever(self) -> None:
        self._server.run()

    def shutdown(self, timeout: float = 5.0) -> None:
        """Close the listening socket and every connection; stop the workers (waiting at
        most ``timeout`` seconds for them)."""
        server = self._server
        while server._map:
            for channel in list(server._map.values()):
                channel.handle_close()
        server.task_dispatcher.shutdown(timeout=timeout)

    def server_close(self) -> None:
        """Nothing left to close after :meth:`shutdown` (kept for the socketserver API)."""

    def _refused(self, path: str, status: int) -> None:
        provider = path.removeprefix("/webhooks/").strip("/")
        if path.startswith("/webhooks/") and provider in PROVIDERS and status == 413:
            self.service.metrics.webhooks.labels(provider, "too_large").inc()

    # -- the WSGI application ------------------------------------------------------------
    def app(self, environ: dict[str, Any], start: StartResponse) -> Iterable[bytes]:
        method = environ["REQUEST_METHOD"]
        path = environ.get("PATH_INFO", "") or "/"
        if method == "POST":
            status, body, kind = self._post(path, environ)
        elif method in ("GET", "HEAD"):
            status, body, kind = self._get(path, environ)
        else:
            status, body, kind = 405, b"GET, HEAD or POST\n", "text/plain; charset=utf-8"
        start(f"{status} {_REASONS.get(status, '')}".strip(),
              [("Content-Type", kind), ("Content-Length", str(len(body)))])
        return [b"" if method == "HEAD" else body]

    def _get(self, path: str, environ: dict[str, Any]) -> tuple[int, bytes, str]:
        service = self.service
        text = "text/plain; charset=utf-8"
        if path == "/healthz":
            return 200, b"ok\n", text
        if path == "/readyz":
            ready, reason = service.ready()
            return (200 if ready else 503), reason.encode() + b"\n", text
        if path in ("/metrics", "/status") and not self._authorized(environ):
            return 401, b"this endpoint needs Authorization: Bearer <status token>\n", text
        if path == "/metrics":
            return 200, service.metrics.exposition(), CONTENT_TYPE
        if path == "/status":
            document = status_document(service, self.repo, self.hooks.branch, self.apps)
            return 200, json.dumps(document, indent=2).encode() + b"\n", "application/json"
        if path.startswith("/webhooks/"):
            return 405, b"webhooks are POSTed\n", text
        return 404, b"not found; try /status, /metrics, /healthz, /readyz\n", text

    def _authorized(self, environ: dict[str, Any]) -> bool:
        if self.status_token is None:
            return True
        given = str(environ.get("HTTP_AUTHORIZATION", ""))
        scheme, _, token = given.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(
            token.strip().encode("utf-8", "replace"), self.status_token)

    def _post(self, path: str, environ: dict[str, Any]) -> tuple[int, bytes, str]:
        if not path.startswith("/webhooks/"):
            return (404, b"not found; webhooks go to /webhooks/<provider>\n",
                    "text/plain; charset=utf-8")
        provider = path.removeprefix("/webhooks/").strip("/")
        verdict = self._webhook(provider, environ)
        if provider in PROVIDERS:
            self.service.metrics.webhooks.labels(provider, verdict.result).inc()
        if verdict.push is not None:
            self.service.pushed(verdict.push.after)
        log.info("webhook %s: %d %s", provider, verdict.status, verdict.message)
        answer = {"result": verdict.result, "message": verdict.message}
        return verdict.status, json.dumps(answer, indent=2).encode() + b"\n", \
            "application/json"

    def _webhook(self, provider: str, environ: dict[str, Any]) -> Verdict:
        hooks = self.hooks
        length = str(environ.get("CONTENT_LENGTH") or "")
        if not length.isdigit():
            return Verdict(411, "bad_request", "a Content-Length header is required")
        body = environ["wsgi.input"].read(int(length))
        headers = {key[5:].replace("_", "-").lower(): str(value)
                   for key, value in environ.items() if key.startswith("HTTP_")}
        headers["content-type"] = str(environ.get("CONTENT_TYPE") or "")
        return judge(provider, headers, body, hooks.secret, hooks.branch, repo=self.repo,
                     deliveries=hooks.deliveries)


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
        "shards": service.shards, "leading": sorted(state.held),
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
