"""Ctrl-C ends a following command within a bounded time.

A follower (``logs -f``) ends on Ctrl-C: its streams close, the API it runs in-process
shuts down, and the interpreter exits. Each step waits on something (a member's socket, a
worker thread in a blocking call) and, on a loaded machine, one once held the exit past
30 s. After the first Ctrl-C the usual clean-up runs; if the process is still alive
``grace`` seconds later it ends with ``code`` anyway (what has been printed was flushed
line by line), and a second Ctrl-C ends it at once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType

GRACE_SECONDS = 5.0


@contextlib.contextmanager
def bounded_interrupt(code: int = 0, grace: float = GRACE_SECONDS) -> Iterator[None]:
    """Within: the first SIGINT raises KeyboardInterrupt as usual and arms a timer that
    ends the process with ``code`` after ``grace`` seconds; a second ends it at once.
    Only from the main thread (elsewhere, nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    interrupted = threading.Event()

    def end() -> None:
        with contextlib.suppress(OSError, ValueError):  # a closed pipe (| head)
            sys.stdout.flush()
        os._exit(code)

    def on_interrupt(_signum: int, _frame: FrameType | None) -> None:
        if interrupted.is_set():
            end()
        interrupted.set()
        timer = threading.Timer(grace, end)
        timer.daemon = True
        timer.start()
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        yield
    finally:
        if not interrupted.is_set():
            signal.signal(signal.SIGINT, previous)
