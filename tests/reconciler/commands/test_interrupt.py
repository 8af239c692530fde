"""Ctrl-C ends a following command in bounded time, even when its clean-up hangs."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]

HANGS_AFTER_CTRL_C = """
import sys, threading, time
sys.path.insert(0, {repo!r})
from reconciler.commands.interrupt import bounded_interrupt

stuck = threading.Event()
# a worker that never ends: the interpreter's exit waits for it (not a daemon)
threading.Thread(target=stuck.wait).start()
try:
    with bounded_interrupt(0, grace={grace}):
        print("following", flush=True)
        while True:
            time.sleep(0.05)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def run(grace: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HANGS_AFTER_CTRL_C.format(
        repo=str(REPO), grace=grace)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline() == "following\n"
    return proc


def test_the_first_ctrl_c_cleans_up_and_the_process_ends_after_the_grace() -> None:
    proc = run(grace=1.0)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    assert proc.wait(20) == 0
    took = time.monotonic() - sent
    assert proc.stdout is not None and proc.stdout.read() == "interrupted\n"
    assert 0.9 <= took < 10, took  # after the clean-up's grace, not at once, not never


def test_a_second_ctrl_c_ends_it_at_once() -> None:
    proc = run(grace=60.0)
    proc.send_signal(signal.SIGINT)
    assert proc.stdout is not None and proc.stdout.readline() == "interrupted\n"
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    assert proc.wait(20) == 0
    assert time.monotonic() - sent < 10
