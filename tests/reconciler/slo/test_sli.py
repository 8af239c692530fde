"""The SLIs serve measures: route groups, per-minute tallies with histogram buckets, the
API middleware (a 5xx and a call that fails without an answer are errors; the console is
no API call)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from fastapi import FastAPI
from fastapi.responses import PlainTextResponse
from prometheus_client import CollectorRegistry
from starlette.testclient import TestClient

from pincompile.contract import LATENCY_BUCKETS
from reconciler.slo.http import MeasuredAPI
from reconciler.slo.sli import SLIs, Tally, route_group


@pytest.mark.parametrize(("path", "group"), [
    ("/api/v1/apps", "workload"),
    ("/api/v1/apps/PinApp/shop/web", "workload"),
    ("/api/v1/apps/PinApp/shop/web/restart", "workload"),
    ("/api/v1/apps/PinApp/shop/web/logs", "debugging"),
    ("/api/v1/apps/PinApp/shop/web/exec", "debugging"),
    ("/api/v1/apps/PinApp/shop/web/pods", "debugging"),
    ("/api/v1/apps/PinApp/shop/web/events", "insight"),
    ("/api/v1/apps/PinApp/shop/web/history", "insight"),
    ("/api/v1/slos", "insight"),
    ("/api/v1/openapi.json", None),
    ("/apps/PinApp/shop/web", None),
    ("/metrics", None),
])
def test_each_api_path_has_its_route_group(path: str, group: str | None) -> None:
    assert route_group(path) == group


def test_a_minute_tallies_events_within_each_bucket_and_failures_apart() -> None:
    tally = Tally()
    at = datetime(2026, 11, 28, 12, 0, 30, tzinfo=UTC).timestamp()
    labels = (("cluster", "a"), ("tier", "reserved"), ("source", "canary"))
    for seconds in (3.0, 25.0, 30.0):
        tally.add("launch-latency", labels, at, seconds)
    tally.add("launch-latency", labels, at, None, bad=True)
    tally.add("launch-latency", labels, at + 60, 1.0)  # the next minute
    assert tally.take(before=at + 60) and not tally.take(before=at + 60)
    [later] = tally.take()
    assert later.at == datetime(2026, 11, 28, 12, 1, tzinfo=UTC) and later.total == 1


def test_the_bucket_counts_are_cumulative_like_prometheus() -> None:
    tally = Tally()
    for seconds in (3.0, 25.0, 30.0):
        tally.add("launch-latency", (), 0.0, seconds)
    tally.add("launch-latency", (), 0.0, None, bad=True)
    [sample] = tally.take()
    assert (sample.total, sample.errors) == (4, 1)
    assert sample.good(25.0, LATENCY_BUCKETS) == 2 and sample.good(5.0, LATENCY_BUCKETS) == 1
    assert sample.good(None, LATENCY_BUCKETS) == 3


def measured(status: int = 200, fail: bool = False) -> tuple[TestClient, SLIs]:
    app = FastAPI()

    @app.get("/api/v1/apps")
    async def apps() -> PlainTextResponse:
        if fail:
            raise RuntimeError("a bug")
        return PlainTextResponse("x", status_code=status)

    @app.get("/")
    async def console() -> PlainTextResponse:
        return PlainTextResponse("page")

    slis = SLIs(CollectorRegistry())
    return TestClient(MeasuredAPI(app, slis), raise_server_exceptions=False), slis


def count(slis: SLIs, code: str) -> float:
    return slis.api_requests.labels("workload", code)._value.get()


def test_api_calls_are_counted_by_status_class_and_5xx_is_an_error() -> None:
    client, slis = measured(503)
    client.get("/api/v1/apps")
    client.get("/")
    assert count(slis, "5xx") == 1
    [sample] = slis.tally.take()
    assert (sample.sli, sample.labels, sample.total, sample.errors) == (
        "api-availability", (("group", "workload"),), 1, 1)


def test_a_call_that_fails_without_an_answer_counts_as_a_500() -> None:
    client, slis = measured(fail=True)
    assert client.get("/api/v1/apps").status_code == 500
    assert count(slis, "5xx") == 1


def test_a_client_error_is_no_error_of_the_api() -> None:
    client, slis = measured(404)
    client.get("/api/v1/apps")
    [sample] = slis.tally.take()
    assert count(slis, "4xx") == 1 and sample.errors == 0
