"""kwok's parent: adopts what exec sessions leave behind and kills it once its session
has ended.

``python -m reconciler.fleet.reaper KWOK [ARGS...]`` makes itself a child subreaper
(``PR_SET_CHILD_SUBREAPER``) and runs kwok as its child, so a process an exec'd command
left behind (its parent exited: a background job, a daemon, a double fork) is adopted by
the reaper instead of by the machine's init. Every :data:`SWEEP_SECONDS`, and at once when
told (SIGUSR1, sent when a session ends), it kills each adopted process whose session
(:data:`.sessions.TOKEN_ENV` in its environment) has no live wrapper under kwok, or that
names no session at all. SIGTERM and SIGINT go to kwok; when kwok exits, every process left
is killed and the reaper exits with kwok's status. kwok dies with the reaper
(``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys

from reconciler.fleet import sessions

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
SWEEP_SECONDS = 30.0
#: what the reaper waits for (blocked, taken with sigtimedwait)
SIGNALS = {signal.SIGCHLD, signal.SIGUSR1, signal.SIGTERM, signal.SIGINT}


def _prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}) failed")


def _in_kwok() -> None:
    """In kwok, before it runs: the signals the reaper blocks unblocked, and SIGKILL when
    the reaper exits, however it exits."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def ended_sessions(kwok: int, me: int) -> list[int]:
    """Adopted processes (and what runs under them) whose session has ended."""
    table = sessions.process_table()
    adopted = [p.pid for p in table.values() if p.ppid == me and p.pid != kwok]
    if not adopted:
        return []
    live = sessions.wrappers(table, {kwok})
    ended = [pid for pid in adopted if sessions.session_token(pid) not in live]
    return sessions.descendants(table, ended)


def reap(kwok: int) -> int | None:
    """Collect every exited child; kwok's exit code if it is among them."""
    code = None
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return code
        if pid == 0:
            return code
        if pid == kwok:
            code = os.waitstatus_to_exitcode(status)


def run(argv: list[str]) -> int:
    """Run ``argv`` (kwok) as the reaper's child until it exits; its exit status."""
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    kwok = subprocess.Popen(argv, preexec_fn=_in_kwok).pid
    me = os.getpid()
    code: int | None = None
    while code is None:
        info = signal.sigtimedwait(SIGNALS, SWEEP_SECONDS)
        if info is not None and info.si_signo in (signal.SIGTERM, signal.SIGINT):
            os.kill(kwok, info.si_signo)
        code = reap(kwok)
        if code is None:
            sessions.kill(ended_sessions(kwok, me))
    # kwok is gone, and every session with it
    table = sessions.process_table()
    sessions.kill(sessions.descendants(table, [p.pid for p in table.values()
                                               if p.ppid == me]))
    reap(kwok)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
