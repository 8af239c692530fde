"""`pincompile port-forward` run as a user runs it, for the e2e tests: a process of its
own, its local port read from the line it prints, Ctrl-C to end it."""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

FORWARDING = re.compile(r"^Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)$")


@contextlib.contextmanager
def port_forwarding(args: list[str], env: dict[str, str | None], timeout: float = 60.0
                    ) -> Iterator[int]:
    """``pincompile port-forward ARGS...`` until the block ends (then Ctrl-C: it must
    exit 0 within 10 s); the local port it printed."""
    environ = {k: v for k, v in {**os.environ, **env}.items() if v is not None}
    proc = subprocess.Popen([str(Path(sys.executable).parent / "pincompile"), "port-forward",
                             *args], env=environ, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], timeout)  # once it listens
        line = proc.stdout.readline() if ready else ""
        found = FORWARDING.match(line.strip())
        assert found, f"port-forward printed {line!r}; stderr: {_rest(proc, timeout)}"
        yield int(found[1])
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _rest(proc: subprocess.Popen[str], timeout: float) -> str:
    with contextlib.suppress(subprocess.TimeoutExpired):
        return proc.communicate(timeout=timeout)[1]
    return "(still running)"


def exchange(port: int, sent: bytes, timeout: float = 20.0, host: str = "127.0.0.1"
             ) -> bytes:
    """What a connection to ``host``:``port`` gets back for ``sent``, up to as many bytes
    (or until it closes)."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(sent)
        back = b""
        while len(back) < len(sent) and (data := sock.recv(65536)):
            back += data
        return back
