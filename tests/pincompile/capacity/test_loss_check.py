"""``validate`` and ``diff`` with ``survive`` in ``pincompile.yaml``: a change that leaves
no room for a required tier after losing a zone is a located error, at that change."""

from __future__ import annotations

import json
from pathlib import Path

from capacity_helpers import CLUSTERS, copy_fleet, line_of, run, set_cpu, set_replicas

from pincompile.repoconfig import repo_config
from tests.support.git import git


def test_validate_passes_and_says_the_fleet_survives(tmp_path: Path) -> None:
    result = run("validate", "--no-cache", str(copy_fleet(tmp_path)))
    assert result.exit_code == 0, result.output
    assert "it survives the loss of any one zone for reserved workloads" in result.output


def test_removing_a_clusters_capacity_fails_validate_at_that_capacity(tmp_path: Path) -> None:
    root = copy_fleet(tmp_path)
    set_cpu(root, "c-1", "8")
    result = run("validate", "--no-cache", "-o", "json", str(root))
    assert result.exit_code == 1
    errors = json.loads(result.stdout)
    at = line_of(root, CLUSTERS, r"cpu:", after="name: c-1")
    assert {(e["file"], e["line"], e["code"]) for e in errors} == {(CLUSTERS, at, "zone-loss")}
    messages = sorted(e["message"] for e in errors)
    assert messages[0].startswith(
        "if zone za (a-1) were lost, cluster 'c-1' would be over its capacity for cpu by 1: "
        "reserved workloads would request 9 of 8; moved there: PinApp/shop/web "
        "(apps/shop/web.yaml:5) +2, PinApp/shop/api (apps/shop/api.yaml:5) +1")
    assert "if zone zb (b-1) were lost" in messages[1]


def test_the_check_needs_survive_in_pincompile_yaml(tmp_path: Path) -> None:
    root = copy_fleet(tmp_path)
    set_cpu(root, "c-1", "8")
    (root / "pincompile.yaml").unlink()
    assert run("validate", "--no-cache", str(root)).exit_code == 0


def test_an_incremental_validate_still_checks_the_loss(tmp_path: Path) -> None:
    root, cache = copy_fleet(tmp_path), tmp_path / "cache"
    assert run("validate", "--cache-dir", str(cache), str(root)).exit_code == 0
    set_replicas(root, "api", 9)  # only an app changed: the snapshot's shortcut
    result = run("validate", "--cache-dir", str(cache), str(root))
    assert result.exit_code == 1
    assert "error[zone-loss]" in result.stderr
    assert '|   capacity: {cpu: "10", memory: 40Gi}' in result.stderr  # its source line


def test_a_pinned_app_no_survivor_accepts_is_reported_at_its_placement(tmp_path: Path
                                                                        ) -> None:
    root = copy_fleet(tmp_path)
    web = (root / "apps" / "shop" / "web.yaml").read_text()
    (root / "apps" / "shop" / "cache.yaml").write_text(
        web.replace("name: web", "name: cache").replace("replicas: 12", "replicas: 1")
        .replace("{spread: zone}", "{zones: [za]}"))
    errors = json.loads(run("validate", "--no-cache", "-o", "json", str(root)).stdout)
    [short] = [e for e in errors if e["file"] == "apps/shop/cache.yaml"]
    assert short["line"] == line_of(root, "apps/shop/cache.yaml", "placement:")
    assert short["message"].startswith(
        "PinApp/shop/cache (reserved) would not fit if zone za (a-1) were lost: 1 of its 1 pods "
        "have no room (cpu 1, memory 1Gi); no surviving cluster accepts it")


def test_survive_settings_are_checked_with_located_errors() -> None:
    _, problems = repo_config({"pincompile.yaml": "survive: {lose: region, tiers: [gold]}\n"})
    assert [(p.line, p.column, p.message) for p in problems] == [
        (1, 17, "survive.lose is 'region'; expected zone or cluster"),
        (1, 33, "'gold' is not a tier; tiers: reserved, ondemand, preemptible")]
    config, problems = repo_config({"pincompile.yaml": "survive: {lose: cluster}\n"})
    assert not problems and config.survive is not None
    assert (config.survive.lose, config.survive.tiers) == ("cluster", ("reserved",))


def _repo(tmp_path: Path) -> Path:
    root = copy_fleet(tmp_path)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "fleet")
    return root


def test_diff_blames_the_app_whose_change_breaks_the_loss(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    set_replicas(root, "api", 9)  # 3 per zone: after a loss, 10.5 of 10 cpu
    result = run("diff", "--base", "HEAD", "-o", "json", str(root))
    assert result.exit_code == 1
    check = json.loads(result.stdout)["lossCheck"]
    assert {(e["file"], e["line"]) for e in check["errors"]} == {
        ("apps/shop/api.yaml", line_of(root, "apps/shop/api.yaml", "placement:"))}
    assert check["alreadyInBase"] == []


def test_diff_blames_the_cluster_whose_capacity_shrank_and_not_what_was_broken_before(
        tmp_path: Path) -> None:
    root = _repo(tmp_path)
    set_cpu(root, "c-1", "8")
    result = run("diff", "--base", "HEAD", str(root))
    assert result.exit_code == 1
    assert f"{CLUSTERS}:{line_of(root, CLUSTERS, 'cpu:', after='name: c-1')}" in result.stderr
    assert "the head would not survive the loss of any one zone" in result.stderr
    git(root, "commit", "-q", "-am", "smaller c-1")
    set_replicas(root, "batch", 2)  # unrelated: the loss was broken already
    result = run("diff", "--base", "HEAD", str(root))
    assert result.exit_code == 0, result.stderr
    assert "note: already so in the base (not this change): if zone za (a-1) were lost" in (
        result.stderr)
