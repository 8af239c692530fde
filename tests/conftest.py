"""Shared test fixtures, chiefly a real local fleet for e2e tests: one ``fleet up`` per
session, ``fleet down`` at the end.

The e2e modules run after every other module, those with fleets of their own before those
on the session fleet (see ``pytest_collection_modifyitems``). Tests marked
``@pytest.mark.e2e`` ask for the ``fleet`` fixture (or ``e2e_toolchain`` when
they manage a fleet of their own). The fleet uses the Cluster specs in
``$PINCOMPILE_E2E_CLUSTERS`` (default: ``examples/platform`` when present, else
``tests/e2e/fixtures/clusters``). The first run builds the binaries (cached afterwards).
Without Go (and without cached binaries) the e2e tests are skipped; with ``CI=true`` that
is an error instead.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from reconciler.fleet import build, profiles
from reconciler.fleet import fleet as fleet_mod
from reconciler.fleet.clusters import ClusterSpec, load_clusters
from reconciler.fleet.errors import FleetError

REPO = Path(__file__).resolve().parents[1]
FIXTURE_CLUSTERS = Path(__file__).parent / "e2e" / "fixtures" / "clusters"
ENABLE = ("e2e tests need Go >= 1.26 to build the fleet once (or cached binaries): "
          + build.ENABLE_HINT + "; CI=true makes this an error")


def clusters_path() -> Path:
    """Cluster specs the session fleet is built from."""
    env = os.environ.get("PINCOMPILE_E2E_CLUSTERS")
    if env:
        return Path(env)
    examples = REPO / "examples" / "platform"
    if examples.exists() and load_clusters(examples):
        return examples
    return FIXTURE_CLUSTERS


def _toolchain_missing() -> bool:
    if build.find_go() is not None:
        return False
    try:
        return not build.binaries_present(build.bin_dir())
    except FleetError:
        return True


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Fold every "no toolchain" skip into ONE summary line (pytest groups by location)."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    longrepr = report.longrepr
    if report.skipped and isinstance(longrepr, tuple) and ENABLE in str(longrepr[2]):
        report.longrepr = (__file__, 1, longrepr[2])


def terminal_echo(config: pytest.Config) -> Callable[[str], None]:
    """Print a line past pytest's output capture, so the first build's progress shows on
    a terminal and in CI logs (plain lines)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")

    def echo(line: str) -> None:
        if reporter is None:
            print(line, flush=True)
            return
        with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
            reporter.write_line(line)
            reporter.flush()

    return echo


def _fleet_order(module: list[pytest.Item]) -> int:
    """0: no e2e test; 1: e2e tests on fleets of their own only; 2: the session fleet."""
    if not any(item.get_closest_marker("e2e") for item in module):
        return 0
    return 2 if any("fleet" in getattr(item, "fixturenames", ()) for item in module) else 1


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the modules without e2e tests first, then those with fleets of their own, then
    those on the session fleet (each group in collection order, a module's tests together
    and in file order): no fleet runs idle beside the unit tests, and the session fleet
    (started by its first user, stopped at the end) runs beside no other fleet."""
    modules: dict[object, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.getparent(pytest.Module) or item, []).append(item)
    ordered = sorted(modules.values(), key=_fleet_order)
    items[:] = [item for module in ordered for item in module]


def pytest_collection_finish(session: pytest.Session) -> None:
    """Say up front when this run will build the fleet binaries (minutes, once)."""
    if not any(item.get_closest_marker("e2e") for item in session.items):
        return
    try:
        target = build.bin_dir()
    except FleetError:
        return
    if not build.binaries_present(target) and build.find_go() is not None:
        terminal_echo(session.config)(
            f"e2e: the fleet binaries are not built yet; the first e2e test builds them into "
            f"{target} (about 8-20 min on 2 cores, progress every 30 s; log: "
            f"{target.parent}/build-{target.name}.log)")


@pytest.fixture(scope="session")
def e2e_toolchain(pytestconfig: pytest.Config) -> Path:
    """The fleet's binary directory; skips (or fails under CI=true) without Go."""
    if _toolchain_missing():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI=true but " + ENABLE, pytrace=False)
        pytest.skip(ENABLE)
    echo = terminal_echo(pytestconfig)
    start = time.monotonic()
    try:
        path = build.ensure_binaries(echo=echo, every=30.0)
    except FleetError as exc:
        pytest.fail(f"{exc}\n{exc.log_tail}", pytrace=False)
    if time.monotonic() - start > 5:
        echo(f"e2e: fleet binaries ready after {time.monotonic() - start:.0f}s")
    return path


def _reap_leftover_fleets(root: Path) -> None:
    """Stop fleets of earlier e2e sessions that died without tearing down."""
    for directory in root.glob("fleet-e2e-*"):
        try:
            pid = int(directory.name.rsplit("-", 1)[1])
        except ValueError:
            continue
        if pid != os.getpid() and not Path(f"/proc/{pid}").exists():
            try:
                fleet_mod.down(directory, echo=lambda _m: None)
            except FleetError:
                continue
            shutil.rmtree(directory, ignore_errors=True)


def new_fleet_dir(tag: str) -> Path:
    """A fleet directory owned by this test session (cleaned up if the session dies)."""
    root = build.cache_root()
    root.mkdir(parents=True, exist_ok=True)
    return root / f"fleet-e2e-{tag}-{os.getpid()}"


@pytest.fixture(scope="session")
def fleet(e2e_toolchain: Path, pytestconfig: pytest.Config) -> Iterator[fleet_mod.FleetState]:
    """A running fleet (host + one control plane per Cluster spec) for the session, with
    the short timers of the ``test`` profile (``PINCOMPILE_FLEET_PROFILE`` picks another)."""
    _reap_leftover_fleets(build.cache_root())
    directory = new_fleet_dir("session")
    start = time.monotonic()
    try:
        state = fleet_mod.up(clusters_path(), directory, echo=lambda m: print(m, flush=True),
                             profile=os.environ.get(profiles.ENV) or profiles.TEST)
    except FleetError as exc:
        pytest.fail(f"fleet up failed: {exc}\n{exc.log_tail}", pytrace=False)
    terminal_echo(pytestconfig)(f"e2e: fleet of {len(state.clusters)} control planes up in "
                                f"{time.monotonic() - start:.1f}s ({directory})")
    try:
        yield state
    finally:
        fleet_mod.down(directory, echo=lambda m: print(m, flush=True))
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session")
def fleet_specs(fleet: fleet_mod.FleetState) -> dict[str, ClusterSpec]:
    """Cluster specs of the session fleet, by name (without the host)."""
    return {s.name: s for s in load_clusters(fleet.clusters_path)}


@contextlib.contextmanager
def fleet_of_its_own(platform: Path, tag: str) -> Iterator[fleet_mod.FleetState]:
    """A fleet of the Cluster specs under ``platform`` for one test module, torn down after
    (use inside a module-scoped fixture that asks for ``e2e_toolchain``)."""
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


@contextlib.contextmanager
def api_clients(kubeconfig: Path | str) -> Iterator[Callable[[str], Any]]:
    """``get(context)`` -> a kubernetes.client.ApiClient for that context (made once)."""
    from kubernetes import config

    clients: dict[str, Any] = {}

    def get(context: str) -> Any:
        if context not in clients:
            clients[context] = config.new_client_from_config(
                config_file=str(kubeconfig), context=context)
        return clients[context]

    try:
        yield get
    finally:
        for client in clients.values():
            client.close()


@pytest.fixture(scope="session")
def kube(fleet: fleet_mod.FleetState) -> Iterator[Callable[[str], Any]]:
    """``kube(context)`` -> a kubernetes.client.ApiClient for that context of the fleet."""
    with api_clients(fleet.kubeconfig) as get:
        yield get
