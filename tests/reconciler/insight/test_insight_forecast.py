"""The forecast on synthetic series whose answer is known: a trend, a week that repeats,
both, and the first hour the forecast crosses a limit."""

from __future__ import annotations

import pytest

from reconciler.insight.forecast import DAY, HOUR, WEEK, fit, forecast, runs_out

T0 = 1_799_971_200.0  # midnight UTC


def weekdays_busy(t: float) -> float:
    """+5 on five days of every week, -12.5 on the other two (a mean of 0)."""
    return 5.0 if (t % WEEK) // DAY < 5 else -12.5


def hourly(days: int, value: object) -> list[tuple[float, float]]:
    return [(T0 + h * HOUR, value(T0 + h * HOUR)) for h in range(days * 24)]  # type: ignore[operator]


def test_a_straight_line_is_found_and_crosses_its_limit_when_it_must() -> None:
    # 10 + 2 a day for 30 days; 100 is crossed 45 days after T0, 15 after the last point
    series = hourly(30, lambda t: 10 + 2 * (t - T0) / DAY)
    result = forecast(series, limit=100.0)
    assert result is not None
    explained = result.fit.explain()
    assert (explained["points"], explained["trendPerDay"], explained["seasonality"],
            explained["r2"]) == (720, 2.0, "weekly", 1.0)
    assert explained["seasonalAmplitude"] == pytest.approx(0.0, abs=1e-9)
    assert result.run_out is not None
    assert result.run_out.at == T0 + 45 * DAY + HOUR  # the first hour over 100
    assert result.daily[0] == (series[-1][0] + DAY, pytest.approx(series[-1][1] + 2))


def test_a_repeating_week_is_found_and_a_flat_trend_never_runs_out() -> None:
    series = hourly(28, lambda t: 50 + weekdays_busy(t))
    model = fit(series)
    assert model is not None and model.seasonality == "weekly"
    assert model.slope == pytest.approx(0.0, abs=1e-12)
    assert model.explain()["seasonalAmplitude"] == 8.75
    assert model.value(T0 + 100 * WEEK) == pytest.approx(50 + weekdays_busy(T0))
    result = forecast(series, limit=56.0)
    assert result is not None and result.run_out is not None
    assert result.run_out.at is None and not result.run_out.already


def test_a_trend_under_a_repeating_week_is_still_its_own() -> None:
    series = hourly(28, lambda t: 20 + 0.1 * (t - T0) / DAY + weekdays_busy(t))
    model = fit(series)
    assert model is not None
    assert model.slope * DAY == pytest.approx(0.1, rel=1e-6)
    assert model.residual_std == pytest.approx(0.0, abs=1e-6)


def test_the_seasonality_follows_the_span() -> None:
    daily = fit(hourly(3, lambda t: 7 + (3.0 if (t % DAY) // HOUR < 12 else -3.0)))
    assert daily is not None and daily.seasonality == "daily"
    assert daily.explain()["seasonalAmplitude"] == 3.0
    short = fit([(T0, 1.0), (T0 + HOUR, 2.0), (T0 + 2 * HOUR, 3.0)])
    assert short is not None and short.seasonality == "none"
    assert short.slope * HOUR == pytest.approx(1.0)
    assert fit([(T0, 1.0), (T0 + HOUR, 2.0)]) is None


def test_a_series_over_its_limit_already_says_so() -> None:
    model = fit([(T0, 5.0), (T0 + HOUR, 5.0), (T0 + 2 * HOUR, 5.0)])
    assert model is not None
    over = runs_out(model, 4.0, 5.0, 30 * DAY)
    assert over.already and over.at == T0 + 2 * HOUR
