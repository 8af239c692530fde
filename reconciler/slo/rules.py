"""Prometheus rules for the SLOs (``pincompile slo --prometheus-rules``): per SLO, recording
rules of its error ratio over the multi-window burn-rate windows and of its budget left,
and the SRE workbook's multi-window, multi-burn-rate alerts (page: 2 % of the budget in
1 h or 5 % in 6 h; ticket: 10 % in 1 d or in 3 d; each also over a window a twelfth as
long, so an alert stops soon after the burning does).

Latency SLOs and the launch SLO keep their ``cluster`` label (a slow cluster alerts on its
own) and the API's availability its ``group``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml
from prometheus_client.utils import floatToGoString

from pincompile.contract import Objective
from reconciler.slo.report import BREAKDOWN
from reconciler.slo.sli import API_REQUESTS, LAUNCH, LAUNCH_FAILURES, PUSH, RECONCILE

WINDOWS = ("5m", "30m", "1h", "2h", "6h", "1d", "3d")
RATIO = "pincompile:slo_errors:ratio_rate{window}"
BUDGET_LEFT = "pincompile:slo_error_budget:remaining"
#: (severity, budget spent, long window, short window) as the SRE workbook alerts.
ALERTS = (("page", 0.02, "1h", "5m"), ("page", 0.05, "6h", "30m"),
          ("ticket", 0.10, "1d", "2h"), ("ticket", 0.10, "3d", "6h"))
_SECONDS = {"m": 60, "h": 3600, "d": 86400}


def seconds(window: str) -> int:
    return int(window[:-1]) * _SECONDS[window[-1]]


def error_ratio(objective: Objective, window: str) -> str:
    """PromQL: the share of the SLO's events that were bad over ``window``, per value of
    its breakdown label."""
    by = BREAKDOWN.get(objective.sli)
    agg = f"sum by ({by})" if by else "sum"
    if objective.sli == "api-availability":
        groups = "|".join(objective.routes)
        return (f'{agg} (rate({API_REQUESTS}{{group=~"{groups}",code="5xx"}}[{window}]))\n'
                f'/\n{agg} (rate({API_REQUESTS}{{group=~"{groups}"}}[{window}]))')
    metric, extra, failures = {
        "launch-latency": (LAUNCH, f'tier="{objective.tier}"', LAUNCH_FAILURES),
        "reconcile-latency": (RECONCILE, "", None),
        "push-to-applied": (PUSH, "", None)}[objective.sli]
    le = floatToGoString(objective.threshold_seconds or 0)
    sep = "," if extra else ""
    good = f'{agg} (rate({metric}_bucket{{{extra}{sep}le="{le}"}}[{window}]))'
    total = f"{agg} (rate({metric}_count{{{extra}}}[{window}]))"
    if failures is not None:
        failed = f"{agg} (rate({failures}{{{extra}}}[{window}]))"
        good = f"(\n  {good}\n  or {failed} * 0\n)"
        total = (f"(\n  ({total} or {failed} * 0)\n  + ({failed} or {total} * 0)\n)")
    return f"1 - {good}\n/\n{total}"


def group_of(objective: Objective) -> dict[str, Any]:
    """The rule group of one SLO."""
    labels = {"slo": objective.name, "sli": objective.sli}
    rules: list[dict[str, Any]] = [
        {"record": RATIO.format(window=w), "expr": error_ratio(objective, w), "labels": labels}
        for w in WINDOWS]
    budget = objective.budget
    rules.append({"record": BUDGET_LEFT, "labels": labels, "expr": (
        f'1 - avg_over_time({RATIO.format(window="1h")}{{slo="{objective.name}"}}'
        f"[{_window(objective)}]) / {budget:g}")})
    for severity, spent, long, short in ALERTS:
        factor = round(spent * objective.window_seconds / seconds(long), 4)
        limit = f"({factor:g} * {budget:g})"
        rules.append({
            "alert": "PincompileSLOBudgetBurn",
            "expr": (f'{RATIO.format(window=long)}{{slo="{objective.name}"}} > {limit}\n'
                     f'and\n{RATIO.format(window=short)}{{slo="{objective.name}"}} > {limit}'),
            "for": "2m" if severity == "page" else "15m",
            "labels": {**labels, "severity": severity, "long_window": long},
            "annotations": {
                "summary": f"SLO {objective.name} burns its error budget {factor:g}x "
                           f"too fast ({long} and {short})",
                "description": (f"{objective.description or objective.sli}: objective "
                                f"{objective.objective:g}% over {objective.window}; "
                                f"{spent:.0%} of the budget would be spent in {long}. "
                                "Details: pincompile slo"),
            }})
    return {"name": f"pincompile-slo-{objective.name}", "rules": rules}


def _window(objective: Objective) -> str:
    days = objective.window_seconds / 86400
    return f"{days:g}d" if days.is_integer() else f"{int(objective.window_seconds)}s"


class _Dumper(yaml.SafeDumper):
    """Block scalars for expressions of several lines, and no anchors."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


_Dumper.add_representer(str, lambda dumper, text: dumper.represent_scalar(
    "tag:yaml.org,2002:str", text, style="|" if "\n" in text else None))


def rules_yaml(objectives: Sequence[Objective]) -> str:
    """A Prometheus rule file for every SLO."""
    document = {"groups": [group_of(o) for o in objectives]}
    return "# Generated by pincompile slo --prometheus-rules; do not edit.\n" + yaml.dump(
        document, Dumper=_Dumper, sort_keys=False, width=1000, default_flow_style=False)
