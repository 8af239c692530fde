"""What a port of a fleet pod answers (``kubectl port-forward``, ``pincompile
port-forward``): kwok runs this script for each forwarded connection (its
``ClusterPortForward``, :func:`.debugging.port_forward_config`), the connection being the
script's stdin and stdout. An HTTP ``GET`` or ``HEAD`` gets a short ``200`` naming what
answered; anything else is echoed back, until the client closes (stdin ends) or
:data:`IDLE_SECONDS` pass without a byte.

Run as ``python -I -S forward_responder.py [UID GID]``: the standard library alone, and,
started as root (kwok's user), it first becomes ``UID:GID`` (the fleet's exec user) in
``/``, so what answers a port can read or write nothing of the fleet's."""

from __future__ import annotations

import contextlib
import os
import select
import sys

IDLE_SECONDS = 600.0
CHUNK = 64 * 1024
BODY = b"pincompile fleet: a kwok pod's port (no container runs here); other bytes echo\n"


def become(argv: list[str]) -> None:
    """``UID GID`` from the arguments, when run as root; then work in ``/``."""
    if len(argv) == 2 and os.geteuid() == 0:
        uid, gid = int(argv[0]), int(argv[1])
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    os.chdir("/")


def answer(first: bytes) -> bytes | None:
    """What to send for the connection's first bytes when they are an HTTP request
    (None: they are not, so they echo)."""
    method = first.split(b" ", 1)[0]
    if method not in (b"GET", b"HEAD") or b" HTTP/1." not in first.split(b"\r\n", 1)[0]:
        return None
    head = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(BODY))
    return head if method == b"HEAD" else head + BODY


def write(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]


def serve(stdin: int = 0, stdout: int = 1, idle: float = IDLE_SECONDS) -> None:
    """Answer or echo one connection (``stdin``, ``stdout``) until it ends."""
    first = True
    while True:
        ready, _, _ = select.select([stdin], [], [], idle)
        data = os.read(stdin, CHUNK) if ready else b""
        if not data:
            return
        reply = answer(data) if first else None
        first = False
        if reply is not None:
            write(stdout, reply)
            return
        write(stdout, data)


def main() -> None:
    become(sys.argv[1:])
    with contextlib.suppress(OSError):  # the connection went
        serve()


if __name__ == "__main__":
    main()
