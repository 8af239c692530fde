"""A PinScaler's scaling chart: step lines of desired, ready and floor from the store's
samples over the last hours, server-rendered SVG on its app page."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient

from reconciler.console.chart import HEIGHT, LEFT, TOP, WIDTH, scaling_chart
from reconciler.store import ScaleSample, Store
from tests.reconciler.console.conftest import logged_in

SCALER = ("PinScaler", "shop", "search")
NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def test_each_value_holds_until_the_next_sample_and_the_last_until_now() -> None:
    samples = [ScaleSample(SCALER, NOW - timedelta(hours=3), 4, 2, 2),
               ScaleSample(SCALER, NOW - timedelta(hours=1, minutes=30), 8, 8, 2)]
    chart = scaling_chart(samples, NOW, hours=6)
    assert chart is not None
    desired = next(line for line in chart.lines if line.name == "desired")
    points = [tuple(map(float, p.split(","))) for p in desired.points.split()]
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    plot = WIDTH - LEFT - 10  # the plot's width between its margins
    assert xs == [LEFT + plot / 2, LEFT + plot * 3 / 4, LEFT + plot * 3 / 4, LEFT + plot]
    assert ys[0] == ys[1] > ys[2] == ys[3] == TOP  # 4, held, then 8 (the top) until now
    assert [line.last for line in chart.lines] == [8, 8, 2]
    assert chart.x_ticks[0].position == LEFT and chart.x_ticks[-1].label == "12:00"
    assert chart.y_ticks[0].label == "0" and chart.y_ticks[0].position == HEIGHT - 24
    assert scaling_chart(samples, NOW + timedelta(hours=7)) is None  # nothing that recent


def test_a_pinscalers_page_draws_its_replicas_and_another_kind_has_no_chart(
        console: TestClient, store: Store) -> None:
    client = logged_in(console)
    empty = client.get("/apps/PinScaler/shop/search").text
    assert "No replicas recorded in the last 6 hours yet" in empty
    now = datetime.now(UTC)
    store.add_samples([ScaleSample(SCALER, now - timedelta(hours=2), 3, 3, 2),
                       ScaleSample(SCALER, now - timedelta(minutes=30), 6, 5, 2),
                       ScaleSample(SCALER, now - timedelta(hours=9), 1, 1, 1)])  # too old
    page = client.get("/apps/PinScaler/shop/search").text
    assert len(re.findall(r'<polyline class="series (desired|ready|floor)"', page)) == 3
    assert "Desired now 6; Ready now 5; Floor now 2 (2 samples, UTC)" in page
    assert 'role="img"' in page and "<script>" not in page
    assert 'id="scaling"' not in client.get("/apps/PinApp/shop/cart").text
