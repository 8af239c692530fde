"""``pincompile logs`` on a terminal leaves out the escape sequences a log line holds (a
tenant's container could otherwise recolour, retitle or write the clipboard of whoever
reads its logs); a pipe gets the lines as they were."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from reconciler.commands.escapes import printable
from tests.support.serve import REPO_ROOT

HOSTILE = (b"east/web-1/main \x1b]0;owned\x07\x1b[31mred\x1b[0m \x1b]52;c;ZXZpbA==\x1b\\"
           b"done\r\x1b[2K\xc2\x9b2J caf\xc3\xa9\n")


def test_escape_sequences_and_controls_are_left_out_but_text_and_tabs_stay() -> None:
    assert printable(HOSTILE) == "east/web-1/main red done café\n".encode()
    assert printable(b"a\tb\n") == b"a\tb\n"
    assert printable(b"\x1b]8;;https://x.test\x1b\\link\x1b]8;;\x1b\\\n") == b"link\n"
    assert printable(b"bad \xff utf-8\n") == "bad \ufffd utf-8\n".encode()


@pytest.fixture
def server() -> Iterator[str]:
    class Logs(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(HOSTILE)))
            self.end_headers()
            self.wfile.write(HOSTILE)

        def log_message(self, *_args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Logs)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def logs_command(base: str) -> list[str]:
    return [sys.executable, "-m", "pincompile.cli", "logs", "PinApp/shop/web",
            "--server", base, "--token", "t"]


def test_logs_on_a_terminal_print_no_escape_sequence(server: str) -> None:
    leader, follower = os.openpty()
    proc = subprocess.Popen(logs_command(server), stdout=follower, stderr=subprocess.PIPE,
                            cwd=REPO_ROOT)
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the command ended and closed its side
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
    assert b"\x1b" not in shown and "\x9b" not in shown.decode()
    assert "red done café".encode() in shown


def test_logs_into_a_pipe_are_the_bytes_as_they_came(server: str) -> None:
    done = subprocess.run(logs_command(server), capture_output=True, cwd=REPO_ROOT,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == HOSTILE
