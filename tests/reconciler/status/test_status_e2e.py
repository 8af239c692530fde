"""``pincompile status`` on a fleet of real control planes: ``--live`` reads the member
objects, and the long-running reconciler (``serve``'s) keeps the host status following
them between passes. The tests run in file order on the exclusive fleet (``status`` lists
every app on the host: no other module's may be there)."""

from __future__ import annotations

import json
import os
import pty
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from kubernetes import client as k8s

from pincompile.cli import cli
from pincompile.compiler import compile_path
from reconciler.engine import Reconciler
from reconciler.fleet import fleet as fleet_mod
from tests.conftest import api_clients
from tests.support.fake_passes import one_pass
from tests.support.fleet import host_status_follows, scale_and_wait, spec_repo
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e
FIXTURE_REPO = Path(__file__).parents[1] / "fixtures" / "repo"


@pytest.fixture(scope="module")
def status_fleet(exclusive_fleet: fleet_mod.FleetState) -> fleet_mod.FleetState:
    return exclusive_fleet


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture specs with one app: web, one replica in each of rt-a, rt-b, rt-c."""
    root = tmp_path_factory.mktemp("specs") / "repo"
    spec_repo(FIXTURE_REPO, root)
    for other in ("api", "notebook", "batch"):
        (root / "apps" / "shop" / f"{other}.yaml").unlink()
    return root


@pytest.fixture(scope="module")
def api(status_fleet: fleet_mod.FleetState) -> Iterator[Callable[[str], k8s.ApiClient]]:
    with api_clients(status_fleet.kubeconfig) as get:
        yield get


def status_json(fleet: fleet_mod.FleetState, *extra: str) -> dict[str, Any]:
    done = CliRunner().invoke(cli, ["status", "PinApp/shop/web", "-o", "json",
                                    "--kubeconfig", str(fleet.kubeconfig), *extra])
    assert done.exit_code == 0, done.output
    [row] = json.loads(done.output)["items"]
    return dict(row)


def cluster_counts(row: dict[str, Any]) -> dict[str, tuple[int, int]]:
    return {c["name"]: (c.get("readyReplicas", 0), c.get("replicas", 0))
            for c in row["clusters"]}


def test_live_status_reads_the_member_objects(status_fleet: fleet_mod.FleetState, repo: Path,
                                             api: Callable[[str], k8s.ApiClient]) -> None:
    done = CliRunner().invoke(cli, ["apply", str(repo), "--kubeconfig",
                                    str(status_fleet.kubeconfig), "--timeout", "120"])
    assert done.exit_code == 0, done.output
    # not a terminal: plain progress lines per cluster
    for cluster in ("rt-a", "rt-b", "rt-c"):
        assert re.search(rf"^{cluster}: (\d+) to write of \1 objects$", done.stderr, re.M)
        assert re.search(rf"^{cluster}: applied (\d+)/\1 \(.+\)$", done.stderr,
                         re.M), done.stderr
        assert re.search(rf"^{cluster}: healthy (\d+)/\1$", done.stderr, re.M), done.stderr
    recorded = status_json(status_fleet)
    assert cluster_counts(recorded) == {"rt-a": (1, 1), "rt-b": (1, 1), "rt-c": (1, 1)}
    assert recorded["statusTime"].endswith("Z")

    scale_and_wait(api("rt-a"), "shop", "web", 2)
    # the host's record is the last pass's: rt-a still 1/1
    assert cluster_counts(status_json(status_fleet))["rt-a"] == (1, 1)
    live = status_json(status_fleet, "--live")
    assert cluster_counts(live) == {"rt-a": (2, 2), "rt-b": (1, 1), "rt-c": (1, 1)}
    assert live["ready"] == "4/4" and live["phase"] == "Healthy"
    assert live["statusTime"] >= recorded["statusTime"]

    table = CliRunner().invoke(cli, ["status", "--live", "--kubeconfig",
                                     str(status_fleet.kubeconfig)])
    assert table.exit_code == 0, table.output
    header, row = table.output.splitlines()[:2]
    assert header.split()[-2:] == ["AGE", "MESSAGE"]
    assert "rt-a=2/2" in row


def test_apply_on_a_terminal_draws_its_progress_table(status_fleet: fleet_mod.FleetState,
                                                      repo: Path) -> None:
    """The same pass under a pseudo-terminal: rich's table, no traceback, exit 0."""
    main, child = pty.openpty()
    proc = subprocess.Popen([str(Path(sys.executable).parent / "pincompile"), "apply",
                             str(repo), "--kubeconfig", str(status_fleet.kubeconfig)],
                            stdin=subprocess.DEVNULL, stdout=child, stderr=child)
    os.close(child)
    screen = b""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        screen += chunk
    os.close(main)
    assert proc.wait(timeout=30) == 0, screen.decode(errors="replace")
    text = screen.decode(errors="replace")
    assert "Traceback" not in text
    assert "CLUSTER" in text and "TO WRITE" in text and "rt-c" in text and "\x1b[" in text


def test_the_long_running_reconciler_keeps_status_following_members(
        status_fleet: fleet_mod.FleetState, repo: Path,
        api: Callable[[str], k8s.ApiClient]) -> None:
    reconciler = Reconciler(str(status_fleet.kubeconfig), watch=True)
    try:
        report = one_pass(reconciler, compile_path(repo), wait=120)
        assert report.ok, report
        assert reconciler.follower is not None
        before = cluster_counts(reconciler.statuses[("PinApp", "shop", "web")])
        assert before["rt-b"] == (1, 1)

        started = time.monotonic()
        scale_and_wait(api("rt-b"), "shop", "web", 3)
        ready_at = time.monotonic() - started

        def rt_b_is_3_of_3(status: dict[str, Any]) -> bool:
            return cluster_counts(status).get("rt-b") == (3, 3)

        followed = host_status_follows(api("host"), "pinapps", "shop", "web", rt_b_is_3_of_3,
                                       timeout=15)
        print(f"host status followed {followed:.1f}s after the pods were ready "
              f"({ready_at:.1f}s after the scale)")
        assert followed < 5.0
        # no pass ran: the follower wrote it (it counts the write once the host answered,
        # which can be after this watch saw it)
        follower = reconciler.follower
        wait_for(lambda: follower.rewrites >= 1, 5, "the follower's rewrite", interval=0.05)
    finally:
        reconciler.close()


def test_plan_and_status_narrow_to_apps(status_fleet: fleet_mod.FleetState, repo: Path,
                                        tmp_path: Path) -> None:
    """``plan`` and ``status`` take KIND/PROJECT/NAME, -p and -l (the spec's labels)."""
    kubeconfig = ["--kubeconfig", str(status_fleet.kubeconfig)]
    applied = CliRunner().invoke(cli, ["apply", str(repo), *kubeconfig, "--timeout", "120"])
    assert applied.exit_code == 0, applied.output

    def status(*args: str) -> tuple[int, str]:
        done = CliRunner().invoke(cli, ["status", *args, *kubeconfig])
        return done.exit_code, done.stdout

    assert status("-o", "name") == (0, "PinApp/shop/web\n")
    assert status("PinApp/shop/web", "-p", "shop", "-o", "name") == (0, "PinApp/shop/web\n")
    assert status("-p", "other", "-o", "name")[0] == 2  # no such project
    assert status("-l", "!team", "-o", "name") == (0, "PinApp/shop/web\n")
    assert status("-l", "team", "-o", "name") == (0, "")
    assert status("PinApp/shop/nope")[0] == 1
    narrow = CliRunner().invoke(cli, ["status", *kubeconfig], env={"COLUMNS": "60"})
    wide = CliRunner().invoke(cli, ["status", "-o", "wide", *kubeconfig],
                              env={"COLUMNS": "60"})
    assert narrow.exit_code == wide.exit_code == 0
    assert all(len(line) <= 60 for line in narrow.stdout.splitlines()), narrow.stdout
    assert "APPLIED" not in narrow.stdout.splitlines()[0]
    assert wide.stdout.splitlines()[0].split()[-3:] == ["APPLIED", "AGE", "MESSAGE"]
    assert len(wide.stdout.splitlines()[1]) > 60
    assert status("-l", "team in (x")[0] == 2

    # a labelled web with a new image: its Deployment would be updated
    edited = tmp_path / "edited"
    shutil.copytree(repo, edited)
    web = edited / "apps" / "shop" / "web.yaml"
    web.write_text(web.read_text().replace("  project: shop\n",
                                           "  project: shop\n  labels: {team: shop}\n")
                   .replace("web:1.0.0", "web:1.0.1"))

    def planned(*args: str) -> str:
        done = CliRunner().invoke(cli, ["plan", str(edited), *args, *kubeconfig])
        assert done.exit_code == 0, done.output
        return done.stdout

    everything = planned()
    assert re.search(r"update\s+Deployment/shop/web", everything)
    for narrowed in (planned("PinApp/shop/web"), planned("-p", "shop"),
                     planned("-l", "team=shop")):
        assert re.search(r"update\s+Deployment/shop/web", narrowed)
    for excluded in (planned("-p", "other"), planned("-l", "team=ads"),
                     planned("PinApp/shop/web", "-l", "team!=shop")):
        assert "Deployment/shop/web" not in excluded
        assert excluded.rstrip().endswith("no changes")
    missing = CliRunner().invoke(cli, ["plan", str(edited), "PinApp/shop/nope", *kubeconfig])
    assert missing.exit_code == 2 and "no app PinApp/shop/nope in the specs" in missing.stderr
