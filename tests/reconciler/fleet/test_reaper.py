"""kwok's reaper adopts what an exec session leaves behind: it lets a live session's
background jobs run, kills them once the session has ended, passes SIGTERM to kwok, and
takes every session down with kwok."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from reconciler.fleet import sessions

#: a stand-in for kwok: starts one session (a wrapper whose command leaves a background
#: job behind, then waits) and, told by a file, a background job that names no session
FAKE_KWOK = """
import subprocess, sys, time, pathlib
from reconciler.fleet import sessions
d = pathlib.Path(sys.argv[1])
script = "(sleep 300 & echo $! > job) ; sleep 300"
subprocess.Popen(sessions.wrapper_argv(sys.argv[2], d, "web-0", ["sh", "-c", script]))
subprocess.Popen(["sh", "-c", "(sleep 300 & echo $! > stray) ; exit"], cwd=d)
time.sleep(300)
"""


def wait_for(condition: object, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(condition) and condition():
            return True
        time.sleep(0.05)
    return False


def pid_in(path: Path) -> int:
    assert wait_for(lambda: path.exists() and path.read_text().strip()), path
    return int(path.read_text())


def gone(pid: int) -> bool:
    stat = sessions._read(pid, "stat")
    return not stat or stat[stat.rindex(b")") + 2:][:1] in b"ZX"


def started(directory: Path, token: str) -> subprocess.Popen[bytes]:
    """A reaper of the fake kwok, whose session has ``token``."""
    return subprocess.Popen([sys.executable, "-m", "reconciler.fleet.reaper",
                             sys.executable, "-c", FAKE_KWOK, str(directory), token])


def test_adopted_processes_live_while_their_session_lives_and_die_after(
        tmp_path: Path) -> None:
    token = uuid.uuid4().hex
    reaper = started(tmp_path, token)
    try:
        job, stray = pid_in(tmp_path / "job"), pid_in(tmp_path / "stray")
        table = sessions.process_table()
        assert table[job].ppid == reaper.pid  # adopted: its parent shell exited
        kwok = next(p.pid for p in table.values()
                    if p.ppid == reaper.pid and p.pid not in (job, stray))
        os.kill(reaper.pid, signal.SIGUSR1)  # a session ended somewhere: sweep now
        assert wait_for(lambda: gone(stray))  # it names no session
        time.sleep(0.5)
        assert not gone(job)  # its session (the wrapper under kwok) still runs
        sessions.kill([sessions.wrappers(sessions.process_table(), {kwok})[token]])
        os.kill(reaper.pid, signal.SIGUSR1)
        assert wait_for(lambda: gone(job))
        reaper.send_signal(signal.SIGTERM)  # goes to kwok; the reaper exits with it
        assert reaper.wait(timeout=10) == 128 + signal.SIGTERM
        assert wait_for(lambda: gone(kwok))
    finally:
        reaper.kill()
        reaper.wait()
        sessions.end_session(token, os.getuid(), set())


def test_kwok_dies_with_its_reaper(tmp_path: Path) -> None:
    """Even a SIGKILL of the reaper leaves no kwok running (``fleet down`` sends SIGTERM
    first, which ends the sessions too)."""
    token = uuid.uuid4().hex
    reaper = started(tmp_path, token)
    pid_in(tmp_path / "job")  # kwok started its session
    try:
        (kwok,) = [p.pid for p in sessions.process_table().values() if p.ppid == reaper.pid
                   and sessions.command_line(p.pid)[:1] == [sys.executable]]
        reaper.kill()
        reaper.wait()
        assert wait_for(lambda: gone(kwok))
    finally:
        reaper.kill()
        reaper.wait()
        sessions.kill([pid_in(tmp_path / "stray")])
        sessions.end_session(token, os.getuid(), set())
        wrapper = [p.pid for p in sessions.process_table().values()
                   if sessions.command_line(p.pid)[5:6] == [token]]
        sessions.kill(wrapper)
