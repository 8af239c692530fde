"""The Prometheus rules ``pincompile slo --prometheus-rules`` writes load in the Prometheus
project's own rule checker, and say what the SRE workbook's multi-window, multi-burn-rate
alerting says.

The checker is ``hack/promrules`` (Prometheus's ``model/rulefmt``, the parser ``promtool
check rules`` runs, and promtool's duplicate check), built from the Go module proxy into
the cache folder on the first run; ``promtool`` itself too when it is in the cache (``make
promtool``: its build takes the better part of an hour on 2 cores). Without Go the checker
tests are skipped, and with ``CI=true`` that is an error."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from pincompile.contract import Objective
from pincompile.verification import DEFAULT_SLOS
from reconciler.slo.rules import error_ratio, rules_yaml
from tests.support.promtool import checkers

CUSTOM = (
    Objective(name="push", sli="push-to-applied", objective=95, window="7d", threshold="30s"),
    Objective(name="debug-api", sli="api-availability", objective=99.5, window="28d",
              routes=["debugging"]),
    Objective(name="ondemand-launch", sli="launch-latency", objective=90, window="14d",
              threshold="1m", tier="ondemand"),
)


@pytest.fixture(scope="module")
def rule_checkers() -> dict[str, Path]:
    found = checkers()
    if not found:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI=true but Go is missing: no rule checker can be built", pytrace=False)
        pytest.skip("the rule checker needs Go to build once (hack/promrules/go.mod)")
    return found


def check(name: str, binary: Path, text: str, tmp_path: Path
          ) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "rules.yaml"
    path.write_text(text)
    command = [str(binary), "check", "rules"] if name == "promtool" else [str(binary)]
    return subprocess.run([*command, str(path)], capture_output=True, text=True, timeout=120,
                          check=False)


def test_the_checker_accepts_the_rules_of_the_default_and_declared_slos(
        rule_checkers: dict[str, Path], tmp_path: Path) -> None:
    for name, binary in rule_checkers.items():
        for objectives in (DEFAULT_SLOS, CUSTOM):
            checked = check(name, binary, rules_yaml(objectives), tmp_path)
            assert checked.returncode == 0, f"{name}: {checked.stdout}{checked.stderr}"
            groups = yaml.safe_load(rules_yaml(objectives))["groups"]
            rules = sum(len(g["rules"]) for g in groups)
            assert f"SUCCESS: {rules} rules found" in checked.stdout, checked.stdout


@pytest.mark.parametrize("broken", [
    ("sum by (group)", "sum by group"),              # no PromQL
    ("severity: page", "severity page"),             # labels that are no mapping
    ("for: 2m", "for: 2 minutes"),                   # no duration
])
def test_the_checker_refuses_a_broken_rule(rule_checkers: dict[str, Path], tmp_path: Path,
                                           broken: tuple[str, str]) -> None:
    """The checker is real: each of these mistakes fails it."""
    text = rules_yaml(DEFAULT_SLOS[:1]).replace(*broken, 1)
    assert text != rules_yaml(DEFAULT_SLOS[:1])
    for name, binary in rule_checkers.items():
        assert check(name, binary, text, tmp_path).returncode != 0, name


def test_the_checker_refuses_duplicate_rules(rule_checkers: dict[str, Path],
                                             tmp_path: Path) -> None:
    twice = rules_yaml(DEFAULT_SLOS[:1] * 2).replace(
        "name: pincompile-slo-api-availability", "name: other", 1)
    assert check("promrules", rule_checkers["promrules"], twice, tmp_path).returncode != 0


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
