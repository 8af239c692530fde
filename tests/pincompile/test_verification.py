"""The canary's policy and the SLOs in pincompile.yaml: defaults, and every mistake a
located error of ``validate``."""

from __future__ import annotations

from pincompile.repoconfig import repo_config, verification
from pincompile.verification import DEFAULT_SLOS


def problems(text: str) -> list[tuple[int, int, str]]:
    _, found = repo_config({"pincompile.yaml": text})
    return [(d.line, d.column, d.message) for d in found]


def test_without_slos_the_platforms_defaults_apply() -> None:
    settings = verification({"pincompile.yaml": "canary: {project: platform-system}\n"})
    assert settings.canary is not None and settings.canary.interval_seconds == 300
    assert settings.canary.tiers == ["reserved"] and settings.canary.replicas == 1
    assert [(o.name, o.objective, o.window, o.threshold) for o in settings.objectives] == [
        ("api-availability", 99.9, "30d", None), ("reserved-launch-latency", 99.0, "30d", "25s"),
        ("reconcile-latency", 99.0, "30d", "30s")]
    assert verification({}).canary is None and verification({}).objectives == DEFAULT_SLOS


def test_declared_slos_replace_the_defaults() -> None:
    settings = verification({"pincompile.yaml": (
        "slos:\n  - {name: push, sli: push-to-applied, objective: 95, window: 7d,"
        " threshold: 30s}\n")})
    assert [(o.name, o.threshold_seconds, o.window_seconds) for o in settings.objectives] == [
        ("push", 30.0, 7 * 86400)]


def test_each_mistake_is_located_where_it_was_written() -> None:
    text = """\
canary:
  project: platform-system
  interval: 30s
  timeout: 1m
slos:
  - {name: launch, sli: launch-latency, objective: 99, threshold: 26s}
  - {name: api, sli: api-availability, objective: 99.9, threshold: 1s}
  - {name: slow, sli: reconcile-latency, objective: 100, threshold: 30s}
  - {name: typo, sli: launch-latency, objectiv: 99, threshold: 25s}
"""
    found = problems(text)
    assert (4, 12, "canary.timeout: timeout 1m is longer than the interval 30s: one probe per "
            "cluster at a time") in found
    assert any(line == 6 and "threshold 26s is not a bucket" in message and "25s" in message
               for line, _, message in found), found
    assert any(line == 7 and "api-availability has no threshold" in message
               for line, _, message in found), found
    assert any(line == 8 and "objective" in message for line, _, message in found), found
    assert any(line == 9 and "objectiv" in message for line, _, message in found), found


def test_a_canary_without_a_project_and_unknown_tiers_are_refused() -> None:
    found = problems("canary: {tiers: [gold]}\n")
    messages = " ".join(m for _, _, m in found)
    assert "missing required field 'project' in canary" in messages
    assert "'gold' is not one of" in messages
    assert verification({"pincompile.yaml": "canary: {tiers: [gold]}\n"}).canary is None


def test_two_slos_of_one_name_are_refused() -> None:
    found = problems("slos:\n  - {name: a, sli: api-availability, objective: 99}\n"
                     "  - {name: a, sli: api-availability, objective: 98}\n")
    assert [(line, m) for line, _, m in found] == [(3, "slos[1].name: two SLOs are named 'a'")]
