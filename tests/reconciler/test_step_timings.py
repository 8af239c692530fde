"""A pass's step timer: each step's wall time, also when the step raised or ran in another
thread, and the one log line serve writes of them."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from reconciler.step_timings import COLLECTOR, Steps, steps_line


def test_each_step_is_timed_also_when_it_raises() -> None:
    step = Steps({"queued": 1.0})
    with step("read"):
        time.sleep(0.05)
    with pytest.raises(ValueError), step("plan"):
        raise ValueError("boom")
    assert list(step.seconds) == ["queued", "read", "plan"]
    assert 0.05 <= step.seconds["read"] < 1.0
    assert step.seconds["plan"] < 0.05


def test_a_step_run_in_another_thread_is_timed_and_returns_its_value() -> None:
    step = Steps()
    with ThreadPoolExecutor(max_workers=1) as pool:
        answer = pool.submit(step.timed("host sync", lambda x: x * 2), 21).result()
    assert answer == 42
    assert "host sync" in step.seconds


def test_the_steps_line_of_a_pass_that_timed_nothing() -> None:
    assert steps_line({}) == "none"
    assert steps_line({"queued": 0.0, "fetch": 0.1234}) == "queued 0.00, fetch 0.12"


def test_the_collectors_pauses_are_summed() -> None:
    import gc

    before = COLLECTOR.seconds
    garbage = [[i] for i in range(200_000)]
    for item in garbage:  # cycles: only the collector frees them
        item.append(item)
    del garbage
    gc.collect()
    assert COLLECTOR.seconds > before
