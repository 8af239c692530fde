"""``pincompile explain`` through click's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pincompile.commands.explain import explain
from pincompile.compiler import compile_path
from tests.support.placement import app, cluster, project, scaler, template


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "platform").mkdir()
    (tmp_path / "apps" / "team").mkdir(parents=True)
    (tmp_path / "platform" / "fleet.yaml").write_text("\n---\n".join([
        project(),
        cluster("east-a", region="east", zone="east-a"),
        cluster("east-b", region="east", zone="east-b"),
        cluster("west-a", region="west", zone="west-a"),
    ]))
    (tmp_path / "apps" / "team" / "web.yaml").write_text("\n---\n".join([
        app("web", replicas=4, placement={"regions": ["east"], "spread": "zone"}),
        scaler("web", "web", 2, 10),
    ]))
    return tmp_path


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(explain, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_explain_prints_the_decision(tree: Path) -> None:
    code, out, err = run("PinApp/team/web", "--root", str(tree))
    assert code == 0, err
    assert out.startswith("PinApp team/web  (apps/team/web.yaml:1)\n")
    assert "scaled by PinScaler web: minReplicas 2, maxReplicas 10" in out
    placed = out.split("Placed in 2 clusters:\n")[1].split("\n\n")[0].splitlines()
    assert placed[0].split() == ["CLUSTER", "REGION", "ZONE", "REPLICAS", "HPA", "MIN", "HPA",
                                 "MAX"]
    assert [row.split() for row in placed[1:3]] == [
        ["east-a", "east", "east-a", "2", "1", "5"], ["east-b", "east", "east-b", "2", "1", "5"]]
    assert "replicas per zone: east-a=2, east-b=2" in out
    filtered = out.split("Filtered out:\n")[1].split("\n\n")[0].splitlines()
    assert filtered[1].split(None, 2) == [
        "west-a", "region", "region west is not in placement.regions [east]"]
    n = sum(1 for m in compile_path(tree).manifests
            if m.source is not None and m.source.resource.key in (
                ("PinApp", "team", "web"), ("PinScaler", "team", "web")))
    assert f"Objects ({n}):" in out


def test_explain_json_and_yaml(tree: Path) -> None:
    code, out, _ = run("PinApp/team/web", "--root", str(tree), "-o", "json")
    assert code == 0
    data = json.loads(out)
    assert data["scaler"] == "PinScaler/team/web"
    assert data["decision"]["replicasByZone"] == {"east-a": 2, "east-b": 2}
    assert data["decision"]["filtered"] == {
        "west-a": "region: region west is not in placement.regions [east]"}
    assert sorted(data["decision"]["scores"]["east-a"]) == [
        "headroom", "stability", "total", "zone-spread"]
    code, out, _ = run("PinApp/team/web", "--root", str(tree), "-o", "yaml")
    assert code == 0 and "replicasByZone:\n    east-a: 2\n" in out


def test_explain_a_scaler_shows_its_target(tree: Path) -> None:
    code, out, _ = run("pinscaler/team/web", "--root", str(tree))
    assert code == 0
    assert out.startswith("PinApp team/web")


def test_unknown_workload_suggests_a_close_name(tree: Path) -> None:
    code, _, err = run("PinApp/team/wbe", "--root", str(tree))
    assert code == 1  # not found, as in every command
    assert err.strip() == (
        "error: no PinApp 'wbe' in project 'team'; did you mean 'PinApp/team/web'?")
    code, _, err = run("PinAp/team/web", "--root", str(tree))
    assert code == 2 and "did you mean 'PinApp'?" in err
    code, _, err = run("web", "--root", str(tree))
    assert code == 2 and "is not KIND/PROJECT/NAME" in err


def test_invalid_specs_print_diagnostics_and_exit_1(tree: Path) -> None:
    (tree / "apps" / "broken.yaml").write_text(
        "apiVersion: pincompute.io/v1\nkind: PinApp\nmetadata: {name: broken, project: team}\n"
        "spec: {replicas: many}\n")
    code, _, err = run("PinApp/team/broken", "--root", str(tree))
    assert code == 1
    assert "apps/broken.yaml:4:" in err and "error: 'PinApp/team/broken' is not among" in err
    # a valid workload is still explained, and the errors follow
    code, out, err = run("PinApp/team/web", "--root", str(tree))
    assert code == 1 and out.startswith("PinApp team/web") and "apps/broken.yaml:4:" in err


def test_a_workload_no_cluster_accepts_is_explained(tree: Path) -> None:
    (tree / "apps" / "huge.yaml").write_text(app("huge", replicas=1, pod=template(cpu="500")))
    code, out, err = run("PinApp/team/huge", "--root", str(tree))
    assert code == 1
    assert "Not placed: no cluster accepts it." in out
    assert "east-a   capacity  one pod needs cpu 500; the cluster's capacity is 64" in out
    assert "no-eligible-cluster" in err
