"""Bursts of triggers become one, the newest revision wins; the windows are kept on the
coalescer's clock (a fake one here, advanced by the tests)."""

from __future__ import annotations

import threading

from reconciler.serve.coalesce import Coalescer, Trigger
from tests.support.clock import FakeClock


def test_a_burst_becomes_one_trigger_for_the_newest_revision() -> None:
    clock = FakeClock()
    mailbox = Coalescer(window=0.3, clock=clock)
    for i, sha in enumerate(["a" * 40, "b" * 40, "c" * 40]):
        mailbox.offer(Trigger("push", sha, received=float(i), delivery=f"d-{i}"))
    assert mailbox.take(timeout=0) is None, "taken before the window passed"
    clock.advance(0.3)
    taken = mailbox.take(timeout=0)
    assert taken is not None
    assert (taken.reason, taken.revision, taken.merged, taken.received, taken.delivery) == \
        ("push", "c" * 40, 3, 2.0, "d-2")
    clock.advance(60)
    assert mailbox.take(timeout=0) is None


def test_take_waits_until_the_burst_has_been_quiet_for_the_window() -> None:
    clock = FakeClock()
    mailbox = Coalescer(window=0.5, clock=clock)
    mailbox.offer(Trigger("push", "a" * 40))
    clock.advance(0.4)
    mailbox.offer(Trigger("push", "b" * 40))  # the window starts again
    clock.advance(0.4)
    assert mailbox.take(timeout=0) is None, "taken 0.4 s after the last push"
    clock.advance(0.1)
    taken = mailbox.take(timeout=0)
    assert taken is not None and taken.revision == "b" * 40 and taken.merged == 2


def test_a_steady_stream_cannot_starve_the_worker() -> None:
    clock = FakeClock()
    mailbox = Coalescer(window=0.4, max_delay=1.0, clock=clock)
    taken = None
    for _ in range(10):  # a push every 0.2 s: never 0.4 s quiet
        mailbox.offer(Trigger("push", "d" * 40))
        taken = taken or mailbox.take(timeout=0)
        clock.advance(0.2)
    assert taken is not None and taken.merged == 6, "taken 1 s after the first push"


def test_a_push_outranks_a_resync_and_keeps_its_revision() -> None:
    mailbox = Coalescer(window=0, clock=FakeClock())
    mailbox.offer(Trigger("push", "e" * 40, received=7.0, delivery="d-7"))
    mailbox.offer(Trigger("resync", received=9.0))
    taken = mailbox.take(timeout=1)
    assert taken is not None
    assert (taken.reason, taken.revision, taken.received, taken.delivery) == \
        ("push", "e" * 40, 7.0, "d-7")


def test_a_waiting_worker_takes_the_trigger_when_its_window_has_passed() -> None:
    clock = FakeClock()
    mailbox = Coalescer(window=2.0, clock=clock)
    got: list[Trigger | None] = []
    worker = threading.Thread(target=lambda: got.append(mailbox.take()))
    worker.start()
    mailbox.offer(Trigger("push", "f" * 40))
    clock.advance(1.9)
    clock.settle()  # the worker has seen 1.9 s pass and waits on
    assert got == [] and worker.is_alive()
    clock.advance(0.1)
    worker.join(timeout=5)
    assert not worker.is_alive() and got[0] is not None and got[0].revision == "f" * 40


def test_close_wakes_a_waiting_worker() -> None:
    clock = FakeClock()
    mailbox = Coalescer(window=0.1, clock=clock)
    got: list[object] = []
    worker = threading.Thread(target=lambda: got.append(mailbox.take()))
    worker.start()
    clock.settle()
    mailbox.close()
    worker.join(timeout=5)
    assert not worker.is_alive() and got == [None]
