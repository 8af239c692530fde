"""Bursts of triggers become one, the newest revision wins."""

from __future__ import annotations

import threading
import time

from reconciler.serve.coalesce import Coalescer, Trigger


def test_a_burst_becomes_one_trigger_for_the_newest_revision() -> None:
    mailbox = Coalescer(window=0.3)
    for i, sha in enumerate(["a" * 40, "b" * 40, "c" * 40]):
        mailbox.offer(Trigger("push", sha, received=float(i), delivery=f"d-{i}"))
    taken = mailbox.take(timeout=5)
    assert taken is not None
    assert (taken.reason, taken.revision, taken.merged, taken.received, taken.delivery) == \
        ("push", "c" * 40, 3, 2.0, "d-2")
    assert mailbox.take(timeout=0.5) is None


def test_take_waits_until_the_burst_is_quiet() -> None:
    mailbox = Coalescer(window=0.5)
    mailbox.offer(Trigger("push", "a" * 40))
    start = time.monotonic()
    assert mailbox.take(timeout=0.2) is None, "taken before the window passed"
    assert mailbox.take(timeout=5) is not None
    assert time.monotonic() - start >= 0.45


def test_a_steady_stream_cannot_starve_the_worker() -> None:
    mailbox = Coalescer(window=0.4, max_delay=1.0)
    stop = threading.Event()

    def keep_pushing() -> None:
        while not stop.is_set():
            mailbox.offer(Trigger("push", "d" * 40))
            time.sleep(0.05)

    pusher = threading.Thread(target=keep_pushing)
    pusher.start()
    try:
        start = time.monotonic()
        assert mailbox.take(timeout=10) is not None
        assert time.monotonic() - start < 5
    finally:
        stop.set()
        pusher.join()


def test_a_push_outranks_a_resync_and_keeps_its_revision() -> None:
    mailbox = Coalescer(window=0)
    mailbox.offer(Trigger("push", "e" * 40, received=7.0, delivery="d-7"))
    mailbox.offer(Trigger("resync", received=9.0))
    taken = mailbox.take(timeout=1)
    assert taken is not None
    assert (taken.reason, taken.revision, taken.received, taken.delivery) == \
        ("push", "e" * 40, 7.0, "d-7")


def test_close_wakes_a_waiting_worker() -> None:
    mailbox = Coalescer(window=0.1)
    got: list[object] = []
    worker = threading.Thread(target=lambda: got.append(mailbox.take()))
    worker.start()
    time.sleep(0.1)
    mailbox.close()
    worker.join(timeout=5)
    assert not worker.is_alive() and got == [None]
