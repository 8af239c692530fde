"""A member cluster's API server that only serves pod logs, on a port of 127.0.0.1, for the
log opener (no fleet): every pod's log is one line, but pod ``missing``'s, which is a 404
Status as the API server answers it."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

LINE = b"a line\n"
TOKEN = "member-token"


@dataclass
class MemberLogs:
    kubeconfig: Path
    """One context, ``east``, for the server (plain HTTP, a bearer token)."""
    asked: list[tuple[str, str | None]] = field(default_factory=list)
    """Each request's path with its query, and its Authorization header."""


class _Logs(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        server: Any = self.server
        server.asked.append((self.path, self.headers.get("Authorization")))
        if "/pods/missing/" in self.path:
            body = json.dumps({"kind": "Status", "status": "Failure", "code": 404,
                               "reason": "NotFound",
                               "message": 'pods "missing" not found'}).encode()
            self.send_response(404)
            self.send_header("Content-Type", "application/json")
        else:
            body = LINE
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@contextlib.contextmanager
def member_logs(folder: Path) -> Iterator[MemberLogs]:
    """The server until the block ends, its kubeconfig written in ``folder``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Logs)
    kubeconfig = folder / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "east",
        "clusters": [{"name": "east", "cluster": {
            "server": f"http://127.0.0.1:{server.server_address[1]}"}}],
        "users": [{"name": "someone", "user": {"token": TOKEN}}],
        "contexts": [{"name": "east", "context": {"cluster": "east", "user": "someone"}}]}))
    served = MemberLogs(kubeconfig)
    server.asked = served.asked  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()
