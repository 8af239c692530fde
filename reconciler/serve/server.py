"""The HTTP side of ``serve``: webhooks in, health, readiness, metrics and status out.

=========================  ======  ==================================================
path                       method  answer
=========================  ======  ==================================================
``/webhooks/<provider>``   POST    202 queued, 200 ping/ignored, 401, 411, 413, 400
``/healthz``               GET     200 while the process runs
``/readyz``                GET     200 ready / 503 not yet (the reason in the body)
``/metrics``               GET     Prometheus text format
``/status``                GET     JSON: ``apps`` (``pincompile status -o json``) and
                                   ``serve`` (leadership, last applied revision, last pass)
=========================  ======  ==================================================
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from reconciler.serve.metrics import CONTENT_TYPE
from reconciler.serve.service import Service
from reconciler.serve.status import AppStatusReader
from reconciler.serve.webhooks import DEFAULT_MAX_BODY, PROVIDERS, Verdict, judge

log = logging.getLogger("pincompile.serve.http")


@dataclass
class WebhookConfig:
    """The shared secret (``None``: every webhook is refused), branch and body limit."""

    secret: bytes | None
    branch: str
    max_body: int = DEFAULT_MAX_BODY


class ServeHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], service: Service, hooks: WebhookConfig,
                 repo: str, apps: AppStatusReader | None = None) -> None:
        super().__init__(address, Handler)
        self.service = service
        self.hooks = hooks
        self.repo = repo
        self.apps = apps


def status_document(service: Service, repo: str, branch: str,
                    apps: AppStatusReader | None = None) -> dict[str, Any]:
    """What ``GET /status`` answers: ``apps`` is the document ``pincompile status -o json``
    prints (read from the host; null when it cannot be read, with ``serve.appsError``),
    ``serve`` this process's own state."""
    rows, error = apps.read() if apps is not None else (None, "no host cluster configured")
    document = serve_document(service, repo, branch)
    if error is not None:
        document["appsError"] = error
    return {"apps": rows, "serve": document}


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


class Handler(BaseHTTPRequestHandler):
    server: ServeHTTPServer
    protocol_version = "HTTP/1.1"
    server_version = "pincompile-serve"

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    def _send(self, status: int, body: bytes, content_type: str = "text/plain; charset=utf-8"
              ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, data: Any) -> None:
        self._send(status, json.dumps(data, indent=2).encode() + b"\n", "application/json")

    def do_GET(self) -> None:
        service = self.server.service
        path = self.path.split("?", 1)[0]
        if path == "/healthz":
            self._send(200, b"ok\n")
        elif path == "/readyz":
            ready, reason = service.ready()
            self._send(200 if ready else 503, reason.encode() + b"\n")
        elif path == "/metrics":
            self._send(200, service.metrics.exposition(), CONTENT_TYPE)
        elif path == "/status":
            self._json(200, status_document(service, self.server.repo, self.server.hooks.branch,
                                            self.server.apps))
        elif path.startswith("/webhooks/"):
            self._send(405, b"webhooks are POSTed\n")
        else:
            self._send(404, b"not found; try /status, /metrics, /healthz, /readyz\n")

    do_HEAD = do_GET

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        if not path.startswith("/webhooks/"):
            self.close_connection = True
            self._send(404, b"not found; webhooks go to /webhooks/<provider>\n")
            return
        provider = path.removeprefix("/webhooks/").strip("/")
        verdict = self._webhook(provider)
        if provider in PROVIDERS:
            self.server.service.metrics.webhooks.labels(provider, verdict.result).inc()
        if verdict.push is not None:
            self.server.service.pushed(verdict.push.after)
        log.info("webhook %s: %d %s", provider, verdict.status, verdict.message)
        self._json(verdict.status, {"result": verdict.result, "message": verdict.message})

    def _webhook(self, provider: str) -> Verdict:
        hooks = self.server.hooks
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            self.close_connection = True
            return Verdict(411, "bad_request", "a Content-Length header is required")
        if int(length) > hooks.max_body:
            self.close_connection = True  # the body stays unread
            return Verdict(413, "too_large",
                           f"body of {length} bytes is over the limit of {hooks.max_body}")
        body = self.rfile.read(int(length))
        return judge(provider, dict(self.headers.items()), body, hooks.secret, hooks.branch)


def parse_listen(listen: str) -> tuple[str, int]:
    """``HOST:PORT`` (or ``:PORT`` for every interface) → an address to bind."""
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"--listen must look like 127.0.0.1:8080 or :8080, not '{listen}'")
    return host.strip("[]") or "0.0.0.0", int(port)
