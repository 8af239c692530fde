"""What the reconciler's end-to-end modules share: a fleet of their own, a git repository
of specs, and API clients per context."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from reconciler.fleet import fleet as fleet_mod
from reconciler.fleet.errors import FleetError


def module_fleet(platform: Path, tag: str) -> Iterator[fleet_mod.FleetState]:
    """A fleet of the Cluster specs under ``platform`` for one test module (``yield from``
    it in a module-scoped fixture); torn down afterwards."""
    from tests.conftest import new_fleet_dir

    directory = new_fleet_dir(tag)
    try:
        state = fleet_mod.up(platform, directory, echo=lambda _m: None)
    except FleetError as exc:
        pytest.fail(f"fleet up failed: {exc}\n{exc.log_tail}", pytrace=False)
    try:
        yield state
    finally:
        fleet_mod.down(directory, echo=lambda _m: None)
        shutil.rmtree(directory, ignore_errors=True)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com",
                           *args], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()


def spec_repo(source: Path, path: Path) -> Path:
    """A git repository at ``path`` holding a copy of ``source``, committed."""
    shutil.copytree(source, path)
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "initial")
    return path


def api_clients(fleet: fleet_mod.FleetState) -> Iterator[Callable[[str], k8s.ApiClient]]:
    """``get(context)`` -> an ApiClient for that context (``yield from`` it in a fixture)."""
    clients: dict[str, k8s.ApiClient] = {}

    def get(context: str) -> k8s.ApiClient:
        if context not in clients:
            clients[context] = k8s_config.new_client_from_config(
                config_file=str(fleet.kubeconfig), context=context)
        return clients[context]

    yield get
    for c in clients.values():
        c.close()
