"""Start, watch and stop the fleet's processes, identified by pid + start time."""

from __future__ import annotations

import contextlib
import os
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from reconciler.fleet.errors import FleetError

#: Popen objects of the processes this Python process started (kept so they get reaped).
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


@dataclass
class Proc:
    """One recorded process of the fleet."""

    name: str
    pid: int
    start_time: int
    log: str
    argv0: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Proc:
        return cls(**{k: data[k] for k in ("name", "pid", "start_time", "log", "argv0")})


def _stat(pid: int) -> tuple[str, int] | None:
    """(state letter, start time in clock ticks) of ``pid``, or None if there is none."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return None
    fields = raw[raw.rfind(")") + 2:].split()
    return fields[0], int(fields[19])


def start_time(pid: int) -> int:
    """The kernel's start time of ``pid`` (0 if it is gone)."""
    stat = _stat(pid)
    return stat[1] if stat else 0


def running(pid: int) -> bool:
    """True while the process ``pid`` runs (a zombie does not)."""
    stat = _stat(pid)
    return stat is not None and stat[0] not in "ZX"


def is_alive(proc: Proc) -> bool:
    """True while the recorded process runs (a zombie or a reused pid does not count)."""
    stat = _stat(proc.pid)
    return stat is not None and stat[0] not in "ZX" and stat[1] == proc.start_time


def spawn(name: str, argv: list[str], log: Path, env: dict[str, str] | None = None,
          cwd: Path | None = None) -> Proc:
    """Start ``argv`` detached (own session), output appended to ``log``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        try:
            popen = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True, close_fds=True, env=env, cwd=cwd)
        except OSError as exc:
            raise FleetError(f"cannot start {name} ({argv[0]}): {exc}") from exc
    _CHILDREN[popen.pid] = popen
    return Proc(name=name, pid=popen.pid, start_time=start_time(popen.pid), log=str(log),
                argv0=argv[0])


def _reap(pid: int) -> None:
    popen = _CHILDREN.pop(pid, None)
    if popen is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            popen.wait(timeout=0.5)
        return
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def stop(procs: Iterable[Proc], timeout: float = 15.0) -> list[Proc]:
    """SIGTERM the live processes, SIGKILL what is left after ``timeout``.

    Returns the processes that still run afterwards (normally none).
    """
    live = [p for p in procs if is_alive(p)]
    for proc in live:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for proc in live:
            if proc.pid in _CHILDREN:
                _reap(proc.pid)
        live = [p for p in live if is_alive(p)]
        if not live:
            break
        time.sleep(0.1)
    for proc in live:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
    for proc in live:
        for _ in range(50):
            _reap(proc.pid)
            if not is_alive(proc):
                break
            time.sleep(0.1)
    return [p for p in live if is_alive(p)]


def log_tail(path: str | Path, lines: int = 30) -> str:
    """The last ``lines`` lines of a log file ('' if unreadable)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 64 * 1024))
            text = handle.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def client_ssl_context(ca: Path, cert: Path, key: Path) -> ssl.SSLContext:
    """TLS context that trusts the fleet CA and presents a client cert."""
    ctx = ssl.create_default_context(cafile=str(ca))
    ctx.load_cert_chain(str(cert), str(key))
    return ctx


def probe(url: str, ctx: ssl.SSLContext | None = None, timeout: float = 2.0) -> bool:
    """True when GET ``url`` answers 200."""
    try:
        with urllib.request.urlopen(url, context=ctx, timeout=timeout) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


def wait_until_ready(waits: list[tuple[Proc, str, ssl.SSLContext | None]],
                     timeout: float) -> None:
    """Poll each (process, URL) until it answers 200; fail fast if a process dies.

    Raises FleetError with the tail of the failing process's log.
    """
    pending = list(waits)
    deadline = time.monotonic() + timeout
    while pending:
        still = []
        for proc, url, ctx in pending:
            if not is_alive(proc):
                raise FleetError(f"{proc.name} exited during startup (log: {proc.log})",
                                 log_tail(proc.log))
            if not probe(url, ctx):
                still.append((proc, url, ctx))
        pending = still
        if not pending:
            return
        if time.monotonic() > deadline:
            proc, url, _ = pending[0]
            raise FleetError(f"{proc.name} not ready at {url} after {timeout:.0f}s "
                             f"(log: {proc.log})", log_tail(proc.log))
        time.sleep(0.25)
