"""Shared test fixtures, chiefly real local fleets for e2e tests: at most two ``fleet up``
per run, each fleet down once its last test is done.

- ``fleet``: the session fleet, for every e2e test that can share one: each works in
  namespaces or projects of its own. It uses the Cluster specs in
  ``$PINCOMPILE_E2E_CLUSTERS`` (default: ``examples/platform`` when present, else
  ``tests/e2e/fixtures/clusters``).
- ``exclusive_fleet``: for a module that must be the only reconciler of its fleet (it
  reconciles a whole spec tree, prunes included, and reads back everything on the host)
  or that stops its clusters or breaks their nodes. Its member clusters are those of
  ``tests/reconciler/fixtures/{repo,failover,nodes}/platform``; each module starts on it as
  ``fleet up`` left it (:func:`tests.support.fleet.reset`).

Both run the ``test`` timer profile (``$PINCOMPILE_FLEET_PROFILE``: short controller
timers; tests read them with :func:`tests.support.fleet.timer`). The modules that use a
fleet come one after another (``pytest_collection_modifyitems``); under ``make test``'s
two xdist workers the two fleets' modules run side by side. The first run builds the
binaries (cached afterwards). Without Go (and without cached binaries) the e2e tests are
skipped; with ``CI=true`` that is an error instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from reconciler.fleet import build, profiles
from reconciler.fleet import fleet as fleet_mod
from reconciler.fleet.clusters import ClusterSpec, load_clusters
from reconciler.fleet.errors import FleetError
from tests.support.fleet import reset

REPO = Path(__file__).resolve().parents[1]
FIXTURE_CLUSTERS = Path(__file__).parent / "e2e" / "fixtures" / "clusters"
#: the member clusters of the exclusive fleet (``rt-*``, ``fo-*`` and ``heal-a``)
EXCLUSIVE_CLUSTERS = [Path(__file__).parent / "reconciler" / "fixtures" / tree / "platform"
                      / "clusters" / name for tree, name in (
                          ("repo", "clusters.yaml"), ("failover", "clusters.yaml"),
                          ("nodes", "heal.yaml"))]
#: the fleets' timer profile: short controller timers (``reconciler/fleet/profiles.py``)
os.environ.setdefault(profiles.ENV, profiles.TEST)
#: a table's width is a test's own choice (its COLUMNS), never the launching terminal's
os.environ.pop("COLUMNS", None)
#: the fleets this process started, by directory (stopped after their last test)
STARTED: dict[Path, str] = {}
#: names the run (its first process's pid) across the processes of ``pytest -n``
RUN_ENV = "PINCOMPILE_E2E_RUN"
#: per fleet fixture, the modules that use it
USERS: dict[str, set[object]] = {"exclusive_fleet": set(), "fleet": set()}
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


def _uses(item: pytest.Item, fixture: str) -> bool:
    return fixture in getattr(item, "fixturenames", ())


def _fleet_order(module: list[pytest.Item]) -> int:
    """0: no e2e test; 1: e2e tests on fleets of their own; 2: on the exclusive fleet;
    3: on the session fleet."""
    if not any(item.get_closest_marker("e2e") for item in module):
        return 0
    if any(_uses(item, "fleet") for item in module):
        return 3
    return 2 if any(_uses(item, "exclusive_fleet") for item in module) else 1


#: the xdist group of each fleet order (see ``_fleet_order``): one worker runs the modules
#: on the session fleet, the other those on the exclusive fleet or fleets of their own
GROUPS = {1: "exclusive-fleet", 2: "exclusive-fleet", 3: "session-fleet"}


def _groups_file() -> Path:
    """Where xdist's workers tell its scheduler each e2e module's group (the scheduler
    sees test ids only)."""
    return Path(tempfile.gettempdir()) / f"pincompile-e2e-groups-{os.environ[RUN_ENV]}.json"


@pytest.hookimpl(optionalhook=True)  # an xdist hook: without xdist it is never called
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup``: each e2e module's group (:data:`GROUPS`) is one unit of work,
    run by one worker in collection order; every other test is a unit of its own. (xdist's
    own ``xdist_group`` marks rename the test ids, which pytest 9 ignores.)"""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class FleetGroups(LoadScopeScheduling):
        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:
                path = _groups_file()
                self.groups = json.loads(path.read_text()) if path.exists() else {}
            return self.groups.get(nodeid.split("::", 1)[0], nodeid)

    return FleetGroups(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Order the modules, a module's tests together and in file order.

    One process: the modules without e2e tests first, then those with fleets of their
    own, then those on the exclusive fleet, then those on the session fleet (each group in
    collection order): no fleet runs idle beside the unit tests, and each fleet (started
    by its first user, stopped after its last) runs beside no other fleet.

    Under ``pytest -n 2 --dist loadgroup`` (``make test``): the session fleet's modules
    are one group of work and the others' another (``pytest_xdist_make_scheduler``), each
    run by one worker in that order, the largest first, while the unit tests fill the
    workers' time after them (the two fleets run side by side: their tests mostly
    wait)."""
    modules: dict[object, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.getparent(pytest.Module) or item, []).append(item)
    ordered = sorted(modules.values(), key=_fleet_order)
    if hasattr(config, "workerinput"):  # an xdist worker: tell the scheduler the groups
        groups = {m[0].nodeid.split("::", 1)[0]: GROUPS[_fleet_order(m)] for m in ordered
                  if _fleet_order(m) in GROUPS}
        path = _groups_file()
        scratch = path.with_name(f"{path.name}.{os.getpid()}")
        scratch.write_text(json.dumps(groups))
        scratch.replace(path)
    items[:] = [item for module in ordered for item in module]
    for fixture, users in USERS.items():
        users.update(_module(m[0]) for m in ordered if any(_uses(i, fixture) for i in m))


def _module(item: pytest.Item | None) -> object:
    return item.getparent(pytest.Module) if item is not None else None


@pytest.hookimpl(trylast=True)  # after pytest's own: the module's fixtures are torn down
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Stop a fleet once the last module that uses it is done and its fixtures are torn
    down (those modules come one after another: ``pytest_collection_modifyitems``)."""
    for fixture, users in USERS.items():
        if _module(item) in users and _module(nextitem) not in users:
            _stop_started(fixture)


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault(RUN_ENV, str(os.getpid()))  # xdist's workers inherit it


def pytest_unconfigure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        _groups_file().unlink(missing_ok=True)


def _starts_file() -> Path:
    """Where every process of this run notes when it started and stopped each fleet
    (``TAG start|stop EPOCH`` lines)."""
    return build.cache_root() / f"e2e-fleet-starts-{os.environ[RUN_ENV]}.txt"


def _note(tag: str, what: str) -> None:
    with open(_starts_file(), "a") as out:
        out.write(f"{tag} {what} {time.time():.0f}\n")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say how many fleets this run started and how long each was up (the longest is the
    run's critical path: its modules run one after another on one worker)."""
    path = _starts_file()
    if hasattr(terminalreporter.config, "workerinput") or not path.exists():
        return
    notes = [line.split() for line in path.read_text().splitlines() if line.strip()]
    path.unlink()
    started = {tag: int(at) for tag, what, at in notes if what == "start"}
    stopped = {tag: int(at) for tag, what, at in notes if what == "stop"}
    shown = [f"{tag} (up {stopped[tag] - at} s)" if tag in stopped else tag
             for tag, at in started.items()]
    terminalreporter.write_line(
        f"e2e: {len(started)} fleet start(s) in this run: {', '.join(shown)}")


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


def _start(clusters: Path | list[Path], tag: str, echo: Callable[[str], None]
           ) -> fleet_mod.FleetState:
    """Start a fleet of ``clusters`` (a folder or file of Cluster specs, or several
    files) for this session; stopped by :func:`_stop_started`."""
    _reap_leftover_fleets(build.cache_root())
    directory = new_fleet_dir(tag)
    if isinstance(clusters, list):  # one folder of the files
        folder = directory.with_name(directory.name + "-clusters")
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for index, path in enumerate(clusters):
            shutil.copy(path, folder / f"{index:02d}-{path.name}")
        clusters = folder
    start = time.monotonic()
    STARTED[directory] = tag
    try:
        state = fleet_mod.up(clusters, directory, echo=lambda m: print(m, flush=True))
    except FleetError as exc:
        _stop_started(tag)
        pytest.fail(f"fleet up failed: {exc}\n{exc.log_tail}", pytrace=False)
    _note(tag, "start")
    echo(f"e2e: fleet {tag!r} of {len(state.clusters)} control planes up in "
         f"{time.monotonic() - start:.1f}s ({directory})")
    return state


def _stop_started(tag: str) -> None:
    for directory, started in STARTED.items():
        if started != tag:
            continue
        if (directory / fleet_mod.STATE_FILE).exists():
            fleet_mod.down(directory, echo=lambda m: print(m, flush=True))
            _note(tag, "stop")
        shutil.rmtree(directory, ignore_errors=True)
        shutil.rmtree(directory.with_name(directory.name + "-clusters"), ignore_errors=True)


@pytest.fixture(scope="session")
def fleet(e2e_toolchain: Path, pytestconfig: pytest.Config) -> Iterator[fleet_mod.FleetState]:
    """A running fleet (host + one control plane per Cluster spec) for the session."""
    try:
        yield _start(clusters_path(), "fleet", terminal_echo(pytestconfig))
    finally:
        _stop_started("fleet")


@pytest.fixture(scope="session")
def _exclusive(e2e_toolchain: Path, pytestconfig: pytest.Config
               ) -> Iterator[fleet_mod.FleetState]:
    """The exclusive fleet, started once (``exclusive_fleet`` makes it as new per module)."""
    try:
        yield _start(EXCLUSIVE_CLUSTERS, "exclusive_fleet", terminal_echo(pytestconfig))
    finally:
        _stop_started("exclusive_fleet")


@pytest.fixture(scope="module")
def exclusive_fleet(_exclusive: fleet_mod.FleetState) -> fleet_mod.FleetState:
    """A fleet no other module uses meanwhile, as ``fleet up`` left it (member clusters
    ``rt-a``, ``rt-b``, ``rt-c`` of region ``rt-east``, ``fo-a``, ``fo-b``, ``fo-c`` of
    ``fo-east`` and ``heal-a``), for a module that reconciles a whole spec tree, stops
    clusters or breaks nodes."""
    reset(_exclusive)
    return _exclusive


@contextlib.contextmanager
def fleet_of_its_own(platform: Path, tag: str) -> Iterator[fleet_mod.FleetState]:
    """A fleet of the Cluster specs under ``platform`` for one test module, torn down after
    (use inside a module-scoped fixture that asks for ``e2e_toolchain``): a third fleet
    start; prefer ``exclusive_fleet``."""
    try:
        yield _start(platform, tag, lambda _m: None)
    finally:
        _stop_started(tag)


@pytest.fixture(scope="session")
def fleet_specs(fleet: fleet_mod.FleetState) -> dict[str, ClusterSpec]:
    """Cluster specs of the session fleet, by name (without the host)."""
    return {s.name: s for s in load_clusters(fleet.clusters_path)}


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
