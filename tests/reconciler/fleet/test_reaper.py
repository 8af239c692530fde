"""kwok's reaper adopts what an exec session leaves behind: it lets a live session's
background jobs run, kills them once the session has ended, passes SIGTERM to kwok, and
takes every session down with kwok."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

from reconciler.fleet import sessions
from reconciler.fleet.processes import running
from tests.support.wait import wait_for

#: a stand-in for kwok: starts one session (a wrapper whose command leaves a background
#: job behind, then waits) and a background job that names no session
FAKE_KWOK = """
import subprocess, sys, time, pathlib
from reconciler.fleet import sessions
d = pathlib.Path(sys.argv[1])
script = "(sleep 300 & echo $! > job) ; sleep 300"
subprocess.Popen(sessions.wrapper_argv(sys.argv[2], d, "web-0", ["sh", "-c", script]))
subprocess.Popen(["sh", "-c", "(sleep 300 & echo $! > stray) ; exit"], cwd=d)
time.sleep(300)
"""


def pid_in(path: Path) -> int:
    wait_for(lambda: path.exists() and path.read_text().strip(), 10, str(path))
    return int(path.read_text())


def gone(pid: int) -> bool:
    return not running(pid)


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

        def adopted() -> bool:  # their parent shells exited
            table = sessions.process_table()
            return all(table[pid].ppid == reaper.pid for pid in (job, stray))

        wait_for(adopted, 10, "the reaper to adopt both background jobs")
        kwok = next(p.pid for p in sessions.process_table().values()
                    if p.ppid == reaper.pid and p.pid not in (job, stray))
        os.kill(reaper.pid, signal.SIGUSR1)  # a session ended somewhere: sweep now
        wait_for(lambda: gone(stray), 10, "the job of no session to end")
        # the same sweep let the job whose session (its wrapper under kwok) still runs be
        assert not gone(job)
        sessions.kill([sessions.wrappers(sessions.process_table(), {kwok})[token]])
        os.kill(reaper.pid, signal.SIGUSR1)
        wait_for(lambda: gone(job), 10, "the job of the ended session to end")
        reaper.send_signal(signal.SIGTERM)  # goes to kwok; the reaper exits with it
        assert reaper.wait(timeout=10) == 128 + signal.SIGTERM
        wait_for(lambda: gone(kwok), 10, "kwok to end")
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
        wait_for(lambda: gone(kwok), 10, "kwok to end")
    finally:
        reaper.kill()
        reaper.wait()
        sessions.kill([pid_in(tmp_path / "stray")])
        sessions.end_session(token, os.getuid(), set())
        wrapper = [p.pid for p in sessions.process_table().values()
                   if sessions.command_line(p.pid)[5:6] == [token]]
        sessions.kill(wrapper)
