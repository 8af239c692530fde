"""The processes of an exec session on the local fleet, and how a session ends.

kwok runs an exec's command on this machine. The fleet's kubelet front
(:mod:`.kubelet_front`) starts every command under a small shell, the session's
*wrapper*, whose command line carries the session's token, and which exports it as
:data:`TOKEN_ENV` to everything the command starts. When the session's connection
closes, :func:`end_session` kills the wrapper and every process under it; what escaped
the tree (a daemon, a double fork) was adopted by kwok's reaper (:mod:`.reaper`), which
kills every adopted process whose session has ended.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

#: the environment variable that names an exec'd process's session
TOKEN_ENV = "PINCOMPILE_EXEC_SESSION"
#: the wrapper's argument before the token (``sh -c SCRIPT sh pincompile-exec TOKEN ...``)
WRAPPER_NAME = "pincompile-exec"
#: the wrapper: runs the command in the pod's scratch directory (its HOME), with the
#: pod's name as HOSTNAME and the session's token in the environment; it stays the
#: command's parent (``exit`` after it), so the session's processes are the tree under it
WRAPPER = ('cd -- "$3" || exit 126; HOME=$3 HOSTNAME=$4 ' + TOKEN_ENV + '=$2; '
           'export HOME HOSTNAME ' + TOKEN_ENV + '; shift 4; "$@"; exit $?')
PROC = Path("/proc")


@dataclass(frozen=True)
class Process:
    """One process as ``/proc`` shows it."""

    pid: int
    ppid: int
    uid: int


def _read(pid: int, name: str) -> bytes:
    try:
        return (PROC / str(pid) / name).read_bytes()
    except OSError:
        return b""


def command_line(pid: int) -> list[str]:
    """A process's arguments ([] once it has exited)."""
    raw = _read(pid, "cmdline")
    return [arg.decode(errors="replace") for arg in raw.split(b"\0")[:-1]] if raw else []


def process_table() -> dict[int, Process]:
    """Every process of this machine (that has not exited while being read)."""
    table = {}
    for entry in os.scandir(PROC):
        if not entry.name.isdigit():
            continue
        raw = _read(int(entry.name), "stat")
        try:
            fields = raw[raw.rindex(b")") + 2:].split()
            uid = entry.stat().st_uid
        except (ValueError, OSError):
            continue
        table[int(entry.name)] = Process(int(entry.name), int(fields[1]), uid)
    return table


def descendants(table: dict[int, Process], roots: Iterable[int]) -> list[int]:
    """``roots`` and every process under them."""
    children: dict[int, list[int]] = {}
    for proc in table.values():
        children.setdefault(proc.ppid, []).append(proc.pid)
    found, todo = [], list(roots)
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def session_token(pid: int) -> str | None:
    """The session a process belongs to, from its environment (None: none or unreadable)."""
    prefix = f"{TOKEN_ENV}=".encode()
    for item in _read(pid, "environ").split(b"\0"):
        if item.startswith(prefix):
            return item[len(prefix):].decode(errors="replace")
    return None


def wrapper_argv(token: str, directory: Path, pod: str, command: list[str]) -> list[str]:
    """The command line kwok runs for an exec of ``command`` in session ``token``."""
    return ["/bin/sh", "-c", WRAPPER, "sh", WRAPPER_NAME, token, str(directory), pod,
            *command]


def wrappers(table: dict[int, Process], parents: set[int]) -> dict[str, int]:
    """The live sessions: token -> pid of its wrapper, among the children of ``parents``
    (kwok's pids: a process that only names a token in its command line is no wrapper)."""
    found = {}
    for proc in table.values():
        if proc.ppid not in parents:
            continue
        argv = command_line(proc.pid)
        if argv[2:5] == [WRAPPER, "sh", WRAPPER_NAME] and len(argv) > 5:
            found[argv[5]] = proc.pid
    return found


def kill(pids: Iterable[int]) -> int:
    """SIGKILL each process; how many were still there."""
    killed = 0
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
            killed += 1
    return killed


def end_session(token: str, uid: int, parents: set[int]) -> int:
    """Kill every process of a session: its wrapper (a child of one of ``parents``) and
    everything under it, and every process of ``uid`` whose environment names the session
    (what left the tree). Returns how many processes were killed."""
    table = process_table()
    roots = [pid for t, pid in wrappers(table, parents).items() if t == token]
    doomed = set(descendants(table, roots))
    doomed |= {p.pid for p in table.values()
               if p.uid == uid and p.pid not in doomed and session_token(p.pid) == token}
    return kill(doomed)
