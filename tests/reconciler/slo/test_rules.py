"""The Prometheus rules ``pincompile slo --prometheus-rules`` writes load in Prometheus's
own rule checker (``promtool check rules``), and say what the SRE workbook's
multi-window, multi-burn-rate alerting says.

The first run builds promtool from the Go module proxy (``hack/promtool/go.mod``) into the
cache folder: 25-35 minutes on the 2-core machine under the load of other work (its
service-discovery plugins pull in the cloud SDKs); later runs reuse it. Without Go the
checker test is skipped, and with ``CI=true`` that is an error."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from pincompile.contract import Objective
from pincompile.verification import DEFAULT_SLOS
from reconciler.slo.rules import error_ratio, rules_yaml
from tests.support.promtool import ensure_promtool

CUSTOM = (
    Objective(name="push", sli="push-to-applied", objective=95, window="7d", threshold="30s"),
    Objective(name="debug-api", sli="api-availability", objective=99.5, window="28d",
              routes=["debugging"]),
    Objective(name="ondemand-launch", sli="launch-latency", objective=90, window="14d",
              threshold="1m", tier="ondemand"),
)


@pytest.fixture(scope="module")
def promtool() -> Path:
    found = ensure_promtool()
    if found is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI=true but Go is missing: promtool cannot be built", pytrace=False)
        pytest.skip("promtool needs Go to build once (hack/promtool/go.mod)")
    return found


def check(promtool: Path, text: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "rules.yaml"
    path.write_text(text)
    return subprocess.run([str(promtool), "check", "rules", str(path)], capture_output=True,
                          text=True, timeout=120, check=False)


def test_promtool_accepts_the_rules_of_the_default_and_declared_slos(
        promtool: Path, tmp_path: Path) -> None:
    for objectives in (DEFAULT_SLOS, CUSTOM):
        checked = check(promtool, rules_yaml(objectives), tmp_path)
        assert checked.returncode == 0, checked.stdout + checked.stderr
        rules = sum(len(g["rules"]) for g in yaml.safe_load(rules_yaml(objectives))["groups"])
        assert f"SUCCESS: {rules} rules found" in checked.stdout, checked.stdout


def test_promtool_refuses_a_broken_rule(promtool: Path, tmp_path: Path) -> None:
    """The checker is real: a rule with an expression that is no PromQL fails."""
    broken = rules_yaml(DEFAULT_SLOS[:1]).replace("sum by (group)", "sum by group", 1)
    assert check(promtool, broken, tmp_path).returncode != 0


def test_each_slo_alerts_at_the_workbooks_burn_rates() -> None:
    groups = yaml.safe_load(rules_yaml(DEFAULT_SLOS))["groups"]
    assert [g["name"] for g in groups] == ["pincompile-slo-api-availability",
                                           "pincompile-slo-reserved-launch-latency",
                                           "pincompile-slo-reconcile-latency"]
    alerts = [r for r in groups[0]["rules"] if "alert" in r]
    assert [(a["labels"]["severity"], a["labels"]["long_window"]) for a in alerts] == [
        ("page", "1h"), ("page", "6h"), ("ticket", "1d"), ("ticket", "3d")]
    assert "> (14.4 * 0.001)" in alerts[0]["expr"] and "ratio_rate5m" in alerts[0]["expr"]
    assert "> (6 * 0.001)" in alerts[1]["expr"] and "ratio_rate30m" in alerts[1]["expr"]
    assert "> (3 * 0.001)" in alerts[2]["expr"] and "> (1 * 0.001)" in alerts[3]["expr"]
    week = yaml.safe_load(rules_yaml(CUSTOM[:1]))["groups"][0]["rules"]
    assert "> (3.36 * 0.05)" in next(r for r in week if "alert" in r)["expr"]  # 2% of 7 days


def test_latency_ratios_count_launch_failures_bad_per_cluster() -> None:
    ratio = error_ratio(DEFAULT_SLOS[1], "5m")
    assert 'pincompile_launch_seconds_bucket{tier="reserved",le="25.0"}[5m]' in ratio
    assert 'pincompile_launch_failures_total{tier="reserved"}[5m]' in ratio
    assert ratio.startswith("1 - ") and "sum by (cluster)" in ratio
    assert 'code="5xx"' in error_ratio(DEFAULT_SLOS[0], "1h")
