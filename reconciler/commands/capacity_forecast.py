"""``pincompile capacity --forecast``: per project and tier, what its pods request and use
at the trend of the stored samples, and when quota (or a cluster's capacity) runs out."""

from __future__ import annotations

from datetime import UTC, datetime

from reconciler.api.insight_models import ForecastReport, SeriesForecast


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.1f}" if abs(value) >= 10 else f"{value:.2f}"


def _trend(value: float) -> str:
    return f"{value:+.2f}" if abs(value) < 10 else f"{value:+,.1f}"


def _until(entry: SeriesForecast, until: str) -> str:
    if entry.overAlready:
        return "over already"
    if entry.runsOut is None:
        return "-" if entry.limit is None else "not within the horizon"
    at, now = (datetime.fromisoformat(t.replace("Z", "+00:00")) for t in (entry.runsOut, until))
    days = (at - now).total_seconds() / 86400
    return f"{at.astimezone(UTC):%Y-%m-%d %H:%M} (in {days:.0f} days)"


def forecast_rows(report: ForecastReport) -> list[list[str]]:
    """Header first: a row per project, tier, resource and measure."""
    rows = [["PROJECT", "TIER", "RESOURCE", "MEASURE", "NOW", "TREND/DAY", "SEASONALITY",
             "QUOTA", "RUNS OUT"]]
    for project in report.projects:
        for s in project.series:
            rows.append([project.project, s.tier, f"{s.resource} ({s.unit})", s.measure,
                         _number(s.last), _trend(s.model.trendPerDay), s.model.seasonality,
                         _number(s.limit) if s.measure == "requested" else "",
                         _until(s, report.until) if s.measure == "requested" else ""])
    return rows


def cluster_rows(report: ForecastReport) -> list[list[str]]:
    rows = [["CLUSTER", "RESOURCE", "REQUESTED NOW", "TREND/DAY", "SEASONALITY",
             "ALLOCATABLE", "RUNS OUT"]]
    for c in report.clusters or []:
        rows.append([c.cluster, f"{c.resource} ({c.unit})", _number(c.last),
                     _trend(c.model.trendPerDay), c.model.seasonality, _number(c.limit),
                     _until(c, report.until)])
    return rows


def heading(report: ForecastReport) -> str:
    hours = report.bucketSeconds / 3600
    step = "hourly" if hours == 1 else f"every {report.bucketSeconds:g} s"
    return (f"Forecast from the samples {report.since} to {report.until} ({step} means), "
            f"{report.horizonDays:g} days ahead; {report.model}")
