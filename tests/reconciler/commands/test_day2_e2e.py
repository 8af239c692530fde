"""Day 2 without serve, on the session fleet, after `pincompile apply` of a PinApp whose
pods carry the platform's sidecar (traffic) and init container (config-sync): `events`
shows the real Kubernetes Events of its objects (a field selector and a controller's
ReplicaSets only a real API server gives) with pincompile's own on the host; `history`
the revisions the passes recorded on its resource; `get pods` counts and lists every
container as kubectl does, and logs and exec reach the sidecar through the members'
kubelets; `describe` shows the objects' health in every cluster it runs in, and
`port-forward` reaches a port of one of its pods."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pincompile.cli import cli
from reconciler.fleet import fleet as fleet_mod
from tests.support.fleet import spec_repo
from tests.support.forwarding import exchange, port_forwarding
from tests.support.git import git
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[3]
PROJECT = "day2-shop"
REF = f"PinApp/{PROJECT}/web"
SPEC = f"""\
apiVersion: pincompute.io/v1
kind: PinApp
metadata: {{name: web, project: {PROJECT}}}
spec:
  replicas: 2
  tier: ondemand
  template:
    containers:
      - name: main
        image: registry.internal/day2-shop/web:IMAGE
        resources: {{cpu: 100m, memory: 128Mi}}
        ports: [{{name: http, containerPort: 8080}}]
    config:
      app.yaml: "port: 8080"
  placement: {{regions: [us-east-1], zones: [us-east-1a, us-east-1b], spread: zone,
              maxClusters: 2}}
  rollout: {{strategy: zone-by-zone, healthTimeout: 60s}}
"""
PROJECT_SPEC = f"""\
apiVersion: pincompute.io/v1
kind: Project
metadata: {{name: {PROJECT}}}
spec:
  owners: [team-shop]
  quota: {{ondemand: {{cpu: "8", memory: 16Gi}}}}
  placement: {{regions: [us-east-1]}}
"""


@dataclass
class Day2:
    repo: Path
    env: dict[str, str | None]
    commits: list[str]


def run(day2: Day2, *args: str) -> Any:
    done = CliRunner().invoke(cli, list(args), env=day2.env)
    assert done.exit_code == 0, f"{args}: {done.output}"
    return done


def commit_image(day2: Day2, image: str) -> None:
    (day2.repo / "apps" / PROJECT).mkdir(parents=True, exist_ok=True)
    (day2.repo / "apps" / PROJECT / "web.yaml").write_text(SPEC.replace("IMAGE", image))
    git(day2.repo, "add", "-A")
    git(day2.repo, "commit", "-qm", f"web {image}")
    day2.commits.append(git(day2.repo, "rev-parse", "HEAD").strip())
    # the shared fleet holds other modules' objects: nothing pruned
    run(day2, "apply", str(day2.repo), "--no-prune", "--timeout", "2m", "-q")


@pytest.fixture(scope="module")
def day2(fleet: fleet_mod.FleetState, tmp_path_factory: pytest.TempPathFactory
         ) -> Iterator[Day2]:
    """The app applied twice (two images, two commits) by `pincompile apply`."""
    source = tmp_path_factory.mktemp("day2") / "source"
    shutil.copytree(REPO / "examples" / "platform", source / "platform")
    shutil.copy(REPO / "examples" / "pincompile.yaml", source)
    (source / "platform" / "projects" / "day2.yaml").write_text(PROJECT_SPEC)
    repo = spec_repo(source, source.parent / "repo")
    found = Day2(repo, {"PINCOMPILE_SERVER": None, "PINCOMPILE_TOKEN": None,
                        "KUBECONFIG": str(fleet.kubeconfig), "COLUMNS": "200"}, [])
    commit_image(found, "1.0.0")
    commit_image(found, "1.1.0")
    yield found


def test_events_without_serve_are_the_clusters_and_pincompiles_own(day2: Day2) -> None:
    def shown() -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = json.loads(run(day2, "events", REF, "-o", "json")
                                                 .stdout)["items"]
        return items

    items = wait_for(lambda: (found := shown()) and any(
        e["reason"] == "SuccessfulCreate" for e in found) and found, 30,
        "the ReplicaSets' events")
    ours = {(e["source"], e["reason"]) for e in items}
    assert ("pincompile", "Applied") in ours, items
    assert {("kubernetes", "ScalingReplicaSet"), ("kubernetes", "Scheduled")} <= ours, items
    placed = {c["name"] for c in json.loads(run(day2, "get", "apps", REF, "-o", "json")
                                            .stdout)["items"][0]["clusters"]}
    members = [e for e in items if e["source"] == "kubernetes"]
    assert {e["cluster"] for e in members} == placed and len(placed) == 2
    assert all(e["object"].split("/")[2].startswith("web") for e in members), members
    assert not any(e["reason"] == "EventsUnreadable" for e in items)


def test_history_without_serve_is_what_apply_recorded(day2: Day2) -> None:
    items = json.loads(run(day2, "history", REF, "-o", "json").stdout)["items"]
    assert [r["revision"] for r in items] == day2.commits[::-1]
    assert items[0]["result"] == "Healthy" and items[0]["commit"] == day2.commits[-1]


def test_every_container_is_counted_listed_and_reached(day2: Day2) -> None:
    pods = json.loads(run(day2, "get", "pods", REF, "-o", "json").stdout)["items"]
    assert len(pods) == 2
    for pod in pods:
        assert pod["ready"] == "2/2", pod  # main and the traffic sidecar, as kubectl
        assert {(c["name"], c["type"]) for c in pod["containers"]} >= {
            ("main", "container"), ("traffic", "sidecar"), ("config-sync", "init")}
    # a new pod's log is served a few seconds after it is Ready (the fleet's Logs object)
    def traffic_lines() -> list[str] | None:
        lines = run(day2, "logs", REF, "-c", "traffic", "--tail", "1").stdout.splitlines()
        return lines if len(lines) >= 2 else None

    sidecar = wait_for(traffic_lines, 30, "a traffic log line from each pod", interval=1.0)
    assert len(sidecar) == 2 and all(line.split(" ")[0].endswith("/traffic")
                                     for line in sidecar), sidecar
    every = run(day2, "logs", REF, "--all-containers", "--tail", "1").stdout
    assert {line.split(" ")[0].rsplit("/", 1)[1] for line in every.splitlines()} >= {
        "main", "traffic", "config-sync"}
    said = CliRunner().invoke(cli, ["exec", REF, "-c", "traffic", "-q", "--", "echo", "hi"],
                              env=day2.env)
    assert (said.exit_code, said.stdout) == (0, "hi\n"), said.output


def test_describe_shows_the_objects_health_in_every_cluster(day2: Day2) -> None:
    shown = run(day2, "describe", REF).stdout
    objects = shown[shown.index("Objects:"):shown.index("Pods:")].splitlines()[2:]
    deployments = [line.split() for line in objects if " Deployment " in line]
    assert len(deployments) == 2 and all(d[3] == "Healthy" for d in deployments), shown
    assert "left out usw2a-general-01" in shown and "Revisions (last 5):" in shown
    assert day2.commits[0][:12] in shown and day2.commits[1][:12] in shown


def test_port_forward_reaches_a_port_of_a_running_pod(day2: Day2) -> None:
    """Straight to the clusters, as exec: kwok forwards the pod's port to the fleet's
    responder, which echoes. The port by its name, on both loopbacks."""
    with port_forwarding([REF, ":http", "-q"], day2.env) as port:
        assert exchange(port, b"ping\n") == b"ping\n"
        assert exchange(port, b"pong\n", host="::1") == b"pong\n"  # a second connection
