"""The canary's probe is compiled as a tenant's workload is: pinned to one cluster and
tier, against the platform project's quota and the cluster's tiers."""

from __future__ import annotations

from pathlib import Path

import pytest

from pincompile.compiler import compile_path
from pincompile.probe import compile_probe
from pincompile.verification import CanaryPolicy

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NAME = "pincompile-canary-rese-abc123"


@pytest.fixture(scope="module")
def sources() -> dict[str, str]:
    result = compile_path(EXAMPLES)
    assert result.ok
    return result.sources


def test_the_probe_is_placed_in_its_cluster_and_only_its_objects_come_out(
        sources: dict[str, str]) -> None:
    policy = CanaryPolicy(project="platform-system", replicas=2)
    probe = compile_probe(sources, policy, NAME, "use1b-general-01", "reserved",
                          revision="abc")
    assert probe.problems == []
    assert sorted((m.cluster, m.kind) for m in probe.manifests) == [
        ("use1b-general-01", "Deployment"), ("use1b-general-01", "PodDisruptionBudget")]
    deployment = next(m.obj for m in probe.manifests if m.kind == "Deployment")
    assert deployment["metadata"]["namespace"] == "pincompute-system"
    assert deployment["spec"]["replicas"] == 2
    assert deployment["metadata"]["labels"]["pincompute.io/tier"] == "reserved"
    pod = deployment["spec"]["template"]["spec"]
    assert pod["priorityClassName"] == "pincompute-reserved"
    assert pod["containers"][0]["name"] == "probe"


def test_a_probe_over_the_projects_quota_is_not_placed(sources: dict[str, str]) -> None:
    greedy = CanaryPolicy(project="platform-system", cpu="64")  # the quota holds 32 cores
    probe = compile_probe(sources, greedy, NAME, "use1a-general-01", "reserved",
                          revision="abc")
    assert probe.manifests == [] and probe.problems
    assert any("quota" in p for p in probe.problems), probe.problems


def test_a_cluster_without_the_tier_or_unknown_places_no_probe(sources: dict[str, str]
                                                                 ) -> None:
    policy = CanaryPolicy(project="platform-system")
    staging = compile_probe(sources, policy, NAME, "usw2a-staging-01", "reserved",
                            revision="abc")
    unknown = compile_probe(sources, policy, NAME, "nowhere-01", "reserved", revision="abc")
    assert staging.manifests == [] and staging.problems, staging
    assert unknown.manifests == [] and any("nowhere-01" in p for p in unknown.problems)


def test_a_probe_of_an_unknown_project_is_not_placed(sources: dict[str, str]) -> None:
    probe = compile_probe(sources, CanaryPolicy(project="nobody"), NAME, "use1a-general-01",
                          "reserved", revision="abc")
    assert probe.manifests == [] and any("nobody" in p for p in probe.problems)
