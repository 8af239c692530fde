"""Every cluster command with a kubeconfig it cannot use or a cluster it cannot reach: one
line naming the problem and exit 2 (usage: the kubeconfig file or --host-context) or 3 (a
cluster: unreachable, or a member whose context the kubeconfig lacks) -- never a traceback,
never exit 70. No fleet: the server is 127.0.0.1 on a port nothing listens on."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.support.forked_cli import ForkedCli
from tests.support.git import git
from tests.support.wait import wait_for

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples"
MEMBERS = ("use1a-general-01", "use1a-general-02", "use1b-general-01", "use1c-gpu-01",
           "usw2a-general-01", "usw2a-staging-01")
COMMANDS = {"plan": ["plan", str(EXAMPLES)], "status": ["status"],
            "apply --dry-run": ["apply", str(EXAMPLES), "--dry-run"],
            "apply": ["apply", str(EXAMPLES), "--no-wait"]}


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def kubeconfig(path: Path, contexts: tuple[str, ...]) -> Path:
    """Every context points at 127.0.0.1 on a closed port."""
    server = f"https://127.0.0.1:{closed_port()}"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": contexts[0],
        "clusters": [{"name": "closed", "cluster": {"server": server,
                                                    "insecure-skip-tls-verify": True}}],
        "users": [{"name": "someone", "user": {"token": "t"}}],
        "contexts": [{"name": c, "context": {"cluster": "closed", "user": "someone"}}
                     for c in contexts]}))
    return path


def shared_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "PINCOMPILE_DEBUG")}


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ForkedCli]:
    """``python -m pincompile.cli``, each run a process of its own forked from one that
    imported the commands this module runs (tests/support/forked_cli.py)."""
    server = ForkedCli([f"reconciler.commands.{name}" for name in ("plan", "apply", "status",
                                                                    "serve")],
                       shared_env(), REPO, tmp_path_factory.mktemp("cli"))
    yield server
    server.close()


def run(cli: ForkedCli, args: list[str], home: Path, timeout: float = 240
        ) -> subprocess.CompletedProcess[str]:
    env = shared_env() | {"HOME": str(home), "PINCOMPILE_CACHE": str(home / "cache")}
    return cli.run(args, env, REPO, timeout)


def assert_clean(proc: subprocess.CompletedProcess[str], code: int, needle: str) -> None:
    output = proc.stdout + proc.stderr
    assert proc.returncode == code, output
    assert "Traceback" not in output and "internal error" not in output, output
    assert needle in output, output


@pytest.mark.parametrize("command", COMMANDS)
def test_a_missing_kubeconfig_file_is_a_usage_error(command: str, tmp_path: Path,
        cli: ForkedCli) -> None:
    proc = run(cli, [*COMMANDS[command], "--kubeconfig", str(tmp_path / "nope")], tmp_path)
    assert_clean(proc, 2, f"error: kubeconfig {tmp_path / 'nope'}: no such file")
    assert len(proc.stderr.strip().splitlines()[-1:]) == 1


@pytest.mark.parametrize("command", COMMANDS)
def test_no_kubeconfig_at_all_says_how_to_give_one(command: str, tmp_path: Path,
        cli: ForkedCli) -> None:
    proc = run(cli, COMMANDS[command], tmp_path)
    assert_clean(proc, 2, "~/.kube/config: no such file (pass --kubeconfig, set $KUBECONFIG")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_malformed_kubeconfig_is_a_usage_error(command: str, tmp_path: Path,
        cli: ForkedCli) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("clusters: [unclosed\n")
    proc = run(cli, [*COMMANDS[command], "--kubeconfig", str(bad)], tmp_path)
    assert_clean(proc, 2, f"kubeconfig {bad} is not a usable kubeconfig: not YAML: line 2")


@pytest.mark.parametrize("command", ["status", "apply"])
def test_a_host_context_missing_from_the_kubeconfig_is_a_usage_error(
        command: str, tmp_path: Path, cli: ForkedCli) -> None:
    path = kubeconfig(tmp_path / "kubeconfig", ("host", *MEMBERS))
    proc = run(cli, [*COMMANDS[command], "--kubeconfig", str(path), "--host-context", "nope"],
               tmp_path)
    assert_clean(proc, 2, f"error: context 'nope' is not in kubeconfig {path} (its contexts: "
                          "host, use1a-general-01")


@pytest.mark.parametrize("command", ["plan", "apply --dry-run"])
def test_member_contexts_missing_from_the_kubeconfig_fail_those_clusters(
        command: str, tmp_path: Path, cli: ForkedCli) -> None:
    path = kubeconfig(tmp_path / "kubeconfig", ("host",))
    proc = run(cli, [*COMMANDS[command], "--kubeconfig", str(path)], tmp_path)
    assert_clean(proc, 3, "context 'use1a-general-01' is not in kubeconfig")
    for member in MEMBERS:
        assert f"context '{member}' is not in kubeconfig" in proc.stdout, proc.stdout
    # nothing was planned: the last line must not read as "in sync"
    assert proc.stdout.strip().splitlines()[-1] == (
        "no changes in the 0 reachable cluster(s); 6 unreachable, not planned"), proc.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_an_unreachable_server_is_a_cluster_failure(command: str, tmp_path: Path,
        cli: ForkedCli) -> None:
    path = kubeconfig(tmp_path / "kubeconfig", ("host", *MEMBERS))
    started = time.monotonic()
    proc = run(cli, [*COMMANDS[command], "--kubeconfig", str(path)], tmp_path)
    assert_clean(proc, 3, "Connection refused")
    assert time.monotonic() - started < 120


def test_the_local_fleets_kubeconfig_is_found_without_being_named(tmp_path: Path,
        cli: ForkedCli) -> None:
    """After ``make demo``, commands find the local fleet without --kubeconfig: the
    kubeconfig ``fleet up`` keeps in the cache folder (here one whose servers are down)."""
    (tmp_path / "cache" / "fleet").mkdir(parents=True)
    kubeconfig(tmp_path / "cache" / "fleet" / "kubeconfig", ("host", *MEMBERS))
    assert_clean(run(cli, COMMANDS["status"], tmp_path), 3, "Connection refused")


@pytest.mark.parametrize("cache", ["", "elsewhere"])
def test_commands_look_where_fleet_up_writes_its_kubeconfig(cache: str, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    from pincompile.cachedir import local_fleet_kubeconfig
    from reconciler.fleet.state import FleetState, default_dir

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PINCOMPILE_CACHE", str(tmp_path / cache) if cache else "")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert FleetState(dir=default_dir()).kubeconfig == local_fleet_kubeconfig()


def test_kubeconfig_wins_over_the_local_fleets(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from reconciler.commands.common import default_kubeconfig

    monkeypatch.setenv("PINCOMPILE_CACHE", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    assert default_kubeconfig() is None  # the client's own default: ~/.kube/config
    (tmp_path / "fleet").mkdir()
    (tmp_path / "fleet" / "kubeconfig").write_text("{}")
    assert default_kubeconfig() == str(tmp_path / "fleet" / "kubeconfig")
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "mine"))
    assert default_kubeconfig() == str(tmp_path / "mine")


def serve_args(tmp_path: Path, *more: str) -> list[str]:
    repo = tmp_path / "repo.git"
    git(tmp_path, "init", "--quiet", "--bare", str(repo))
    return ["serve", "--repo", str(repo), "--listen", "127.0.0.1:0", *more]


@pytest.mark.parametrize("case", ["missing", "malformed", "no such context"])
def test_serve_refuses_a_kubeconfig_it_cannot_use(case: str, tmp_path: Path,
        cli: ForkedCli) -> None:
    path = {"missing": tmp_path / "nope",
            "malformed": tmp_path / "bad.yaml",
            "no such context": kubeconfig(tmp_path / "kubeconfig", ("host",))}[case]
    if case == "malformed":
        path.write_text("clusters: [unclosed\n")
    proc = run(cli, serve_args(tmp_path, "--kubeconfig", str(path), "--host-context",
                               "nope" if case == "no such context" else "host"), tmp_path)
    needle = {"missing": "no such file", "malformed": "not YAML: line 2",
              "no such context": "context 'nope' is not in kubeconfig"}[case]
    assert_clean(proc, 2, needle)


def test_serve_with_an_unreachable_host_keeps_running_not_ready(tmp_path: Path) -> None:
    """A long-running process outlives a host that is down: it stays up, not ready, says
    why, and stops cleanly on SIGTERM."""
    from tests.support.serve import http

    path = kubeconfig(tmp_path / "kubeconfig", ("host", *MEMBERS))
    log = tmp_path / "serve.log"
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"} | {"HOME": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pincompile.cli",
         *serve_args(tmp_path, "--kubeconfig", str(path), "--retry-period", "1s")],
        env=env, stdout=subprocess.DEVNULL, stderr=log.open("w"), cwd=REPO)
    try:
        import re

        found = wait_for(lambda: re.search(r"on (http://127\.0\.0\.1:\d+) as", log.read_text()),
                         120, "serve listening")
        base = found.group(1)
        status, body = http("GET", f"{base}/readyz")
        assert (status, body) == (503, b"has not reached the host cluster yet\n")
        time.sleep(3)  # several Lease attempts fail meanwhile
        assert http("GET", f"{base}/healthz")[0] == 200
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "Traceback" not in log.read_text(), log.read_text()
