"""A real PostgreSQL server from Debian's packages, in a temporary folder, on a unix
socket only (started by ``make test``'s packages; nothing listens on TCP)."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _binaries() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise RuntimeError("PostgreSQL is not installed; `make test` installs it "
                           "(hack/packages.sh)")
    return Path(found[-1]).parent


def _as_server_user(argv: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: run it as Debian's ``postgres`` user then."""
    return ["runuser", "-u", "postgres", "--", *argv] if os.getuid() == 0 else argv


@contextmanager
def postgres_server(base: Path) -> Iterator[str]:
    """Start a server whose data and socket live in ``base``; yield its URL; stop it."""
    binaries = _binaries()
    data, socket = base / "data", base / "socket"
    socket.mkdir(parents=True)
    if os.getuid() == 0:
        shutil.chown(base, "postgres")
        shutil.chown(socket, "postgres")
    run = lambda argv: subprocess.run(_as_server_user(argv), check=True,  # noqa: E731
                                      capture_output=True, timeout=120)
    run([str(binaries / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
         "-E", "UTF8", "--no-sync"])
    run([str(binaries / "pg_ctl"), "-D", str(data), "-w", "-t", "60", "-l",
         str(base / "server.log"), "start", "-o",
         f"-c listen_addresses='' -k {socket} -c fsync=off"])
    try:
        run([str(binaries / "createdb"), "-h", str(socket), "-U", "postgres", "insight"])
        yield f"postgresql://postgres@/insight?host={socket}"
    finally:
        run([str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"])
