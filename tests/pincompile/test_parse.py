"""Valid specs of every kind validate cleanly and read as the SPEC describes."""

from __future__ import annotations

from decimal import Decimal

import pytest

from pincompile.compiler import compile_path
from pincompile.models import KINDS
from tests.support.specs import FIXTURE, REPO_ROOT, catalog_of, compile_all, files, validate


def test_fixture_has_every_kind() -> None:
    kinds = {e.resource.kind for e in catalog_of(files()).entries}
    assert kinds == set(KINDS)


def test_fixture_is_valid_through_every_stage() -> None:
    result = compile_all(files())
    assert result.diagnostics == []
    assert len(result.catalog.entries) == 17


def test_fixture_is_valid_from_disk() -> None:
    result = compile_path(FIXTURE, revision="test")
    assert [d.to_dict() for d in result.diagnostics] == []


def test_parsed_values_follow_the_spec() -> None:
    """Defaults and conversions users rely on, one kind at a time."""
    cat = catalog_of(files())
    by_name = {(e.resource.kind, e.resource.name): e.resource for e in cat.entries}

    east_a = by_name["Cluster", "east-a-01"]
    assert east_a.context == "east-a-01"  # context defaults to the name
    assert east_a.spec.schedulable is True
    assert by_name["Cluster", "east-b-01"].spec.kubernetes_version == "1.28"
    assert by_name["Cluster", "east-c-gpu"].spec.gpu_types == ["A10G"]

    assert by_name["Project", "shop"].namespace == "shop"  # default: the project name
    infra = by_name["Project", "infra"]
    assert infra.namespace == "infra-system"
    assert infra.spec.policy.allow_daemons and infra.spec.policy.allow_host_path

    logging = by_name["PinterestSideCar", "logging"].spec
    assert (logging.mode, logging.inject, logging.order) == ("sidecar", "opt-in", "after-main")
    assert by_name["PinterestSideCar", "node-agent"].spec.mode == "daemon"
    assert by_name["RuntimeProfile", "default"].spec.init_containers[0].name == "config-sync"

    web = by_name["PinApp", "web"].spec
    assert (web.replicas, web.tier, web.placement.spread) == (4, "reserved", "zone")
    assert web.template.containers[0].probes.readiness.port == "http"
    assert web.template.containers[0].probes.liveness.port == 8081
    assert (web.rollout.max_surge, web.rollout.max_unavailable) == ("25%", 0)

    checkout = by_name["PinterestService", "checkout"].spec
    assert checkout.tier == "ondemand"  # the default tier
    # no network given: routable, because its containers declare ports (else bridge)
    assert checkout.template.network == "routable"
    assert "@sha256:" in checkout.template.containers[0].image

    scaler = by_name["PinScaler", "web"].spec
    assert (scaler.min_replicas, scaler.max_replicas, scaler.target) == (2, 8, "web")
    assert scaler.schedules[0].timezone == "America/Los_Angeles"

    jobs = by_name["PinterestJobSet", "reindex"].spec
    assert (jobs.completions, jobs.parallelism, jobs.placement.divide) == (20, 5, True)
    assert jobs.volume_claim_templates[0].type == "ebs"

    training = by_name["PinterestTrainingJob", "recommender"].spec
    assert training.replicas == {"master": 1, "worker": 2}
    assert training.template.gpu_type == "A10G"

    cron = by_name["PinterestCronJob", "nightly-report"].spec
    assert (cron.schedule, cron.timezone, cron.concurrency_policy) == (
        "0 3 * * *", "Europe/Berlin", "Forbid")

    notebook = by_name["PinPod", "notebook"].spec
    assert (notebook.restart_policy, notebook.failover) == ("Always", True)

    daemon = by_name["PinterestDaemon", "node-exporter"].spec
    assert (daemon.placement.clusters, daemon.tolerations) == ("all", "all")


def test_quantities_accept_numbers_and_suffixes() -> None:
    from pincompile.models.types import parse_quantity

    cluster = catalog_of(files()).clusters["east-c-gpu"].resource
    assert cluster.spec.capacity["nvidia.com/gpu"] == "64"
    assert parse_quantity(cluster.spec.capacity["memory"]) == Decimal(4 * 2**40)


def test_specs_are_found_by_kind_not_by_folder() -> None:
    moved = {f"somewhere/else/{i}.yaml": text for i, text in enumerate(files().values())}
    assert validate(moved) == []


@pytest.mark.skipif(not (REPO_ROOT / "examples").is_dir(), reason="no examples/ yet")
def test_examples_validate() -> None:
    result = compile_path(REPO_ROOT / "examples", revision="test")
    assert [f"{d.location()}: {d.message}" for d in result.diagnostics] == []
