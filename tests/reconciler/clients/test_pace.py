"""Writes at a cluster's pace: the limit of writes in flight grows while the API server
answers as fast as usual, settles near the seats it has, halves on a 429 and holds every
write until the ``Retry-After`` is over, and never passes the seats of the server's
priority level."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from reconciler.clients.connect import RetryPolicy, TokenBucket, _Hook
from reconciler.clients.pace import CEILING, FLOOR, PRIORITY_LEVEL_HEADER, Pacer, seats_of
from reconciler.clients.stats import RequestStats


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def serve(pacer: Pacer, rounds: int, answer: Any, resource: str = "deployments"
          ) -> list[int]:
    """``rounds`` rounds of a server that answers every write in flight at once, each in
    ``answer(in_flight)`` seconds; the writes in flight of each round."""
    sent = []
    for _ in range(rounds):
        taken = 0
        while pacer.try_acquire() is None:
            taken += 1
        for _ in range(taken):
            pacer.release(answer(taken), resource)
        sent.append(taken)
    return sent


def queueing(seats: int, seconds: float = 0.02) -> Any:
    """A server with ``seats`` seats: a write beyond them waits for one."""
    return lambda in_flight: seconds * max(1.0, in_flight / seats)


def test_a_server_that_answers_as_fast_however_many_are_sent_gets_up_to_the_ceiling() -> None:
    pacer = Pacer()
    sent = serve(pacer, 30, queueing(seats=10_000))
    assert sent[0] == 8 and sent[-1] == CEILING
    assert sent == sorted(sent)


def test_the_writes_in_flight_settle_near_the_seats_a_server_has() -> None:
    pacer = Pacer()
    sent = serve(pacer, 80, queueing(seats=12))
    assert max(sent) < 2 * 12 * 1.25  # it never queues much more than a seat's worth
    assert all(12 <= n <= 2 * 12 for n in sent[-30:]), sent


def test_a_costlier_kind_is_not_taken_for_a_queue() -> None:
    """A Deployment's create costs the server four times a Service's: neither is a sign of
    queueing when each answers as fast as it usually does."""
    pacer = Pacer()
    for _ in range(10):
        serve(pacer, 2, lambda _n: 0.01, "services")
        serve(pacer, 2, lambda _n: 0.04, "deployments")
    assert pacer.allowed == CEILING


def test_a_server_slow_for_everyone_still_gets_writes() -> None:
    """Answers that stay slow however few are sent (a loaded machine) become the usual
    time again once the limit is down to its floor: the pace recovers from there."""
    pacer = Pacer()
    serve(pacer, 20, queueing(seats=10_000))
    sent = serve(pacer, 60, lambda _n: 0.5)  # 25 times slower, from now on
    assert min(sent) == FLOOR and sent[-1] == CEILING, sent


def test_a_429_halves_the_limit_and_holds_every_write_until_its_retry_after() -> None:
    clock = Clock()
    pacer = Pacer(limit=16, clock=clock)
    assert pacer.try_acquire() is None
    pacer.release(0.01, "deployments", throttled=True, retry_after=2.0)
    assert pacer.allowed == 8 and pacer.throttled == 1
    assert pacer.try_acquire() == pytest.approx(2.0)
    clock.now += 1.9
    assert pacer.try_acquire() == pytest.approx(0.1)
    clock.now += 0.1
    assert pacer.try_acquire() is None


def test_the_seats_of_a_priority_level_cap_the_writes_in_flight() -> None:
    pacer = Pacer(limit=30)
    pacer.cap(5)
    assert pacer.allowed == 5
    assert serve(pacer, 20, queueing(seats=10_000))[-1] == 5


LEVELS = [
    {"metadata": {"name": "exempt", "uid": "u-exempt"}, "spec": {"type": "Exempt"}},
    {"metadata": {"name": "workload-low", "uid": "u-low"},
     "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 100}}},
]
METRICS = """# HELP apiserver_flowcontrol_current_limit_seats [ALPHA] current derived number
apiserver_flowcontrol_current_limit_seats{priority_level="global-default"} 49
apiserver_flowcontrol_current_limit_seats{priority_level="workload-low"} 245
apiserver_flowcontrol_nominal_limit_seats{priority_level="workload-low"} 245
"""


def test_the_seats_of_a_level_come_from_the_servers_metrics() -> None:
    assert seats_of(LEVELS, "u-low", METRICS) == 245
    assert seats_of(LEVELS, "u-exempt", METRICS) is None  # not limited at all
    assert seats_of(LEVELS, "u-low", None) is None  # /metrics not readable: not known
    assert seats_of(LEVELS, "u-other", METRICS) is None


class Inner:
    """The REST client under the hook: answers each request with the next of ``answers``
    (an exception is raised), noting the writes the pacer had in flight then."""

    def __init__(self, pacer: Pacer, *answers: Any) -> None:
        self.pacer, self.answers = pacer, list(answers)
        self.in_flight: list[int] = []

    def __call__(self, method: str, url: str, **_kwargs: Any) -> Any:
        self.in_flight.append(self.pacer.in_flight)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


class Answer:
    status = 200
    headers = {PRIORITY_LEVEL_HEADER: "u-low"}


def test_the_hook_paces_writes_not_reads_and_hears_429s_and_the_priority_level() -> None:
    pacer = Pacer(limit=8)
    throttled = ApiException(status=429, reason="Too Many Requests")
    throttled.headers = {"Retry-After": "0.01"}
    inner = Inner(pacer, Answer(), throttled, Answer())
    hook = _Hook(inner, RequestStats(), TokenBucket(1000, 1000), RetryPolicy(), (1, 1),
                 pacer=pacer)
    hook("GET", "https://h/api/v1/namespaces/a/configmaps/x")
    hook("PATCH", "https://h/api/v1/namespaces/a/configmaps/x?fieldManager=pincompile")
    assert inner.in_flight == [0, 1, 1]  # the GET unpaced; the PATCH twice (one 429)
    assert pacer.in_flight == 0 and pacer.throttled == 1 and pacer.allowed == 4
    assert hook.priority_level == "u-low"
