"""Shared test fixtures, chiefly real local fleets for e2e tests: at most two ``fleet up``
per run, each fleet down once its last test is done.

- ``fleet``: the session fleet, for every e2e test that can share one: each works in
  namespaces or projects of its own. It uses the Cluster specs in
  ``$PINCOMPILE_E2E_CLUSTERS`` (default: ``examples/platform`` when present, else
  ``tests/e2e/fixtures/clusters``). Under xdist its modules are two groups of work, run
  side by side on the one fleet (the first process to need it starts it, the last to be
  done with it stops it); a module marked ``fleet_alone("why")`` (it stops a component,
  or prunes what is not its own) has the fleet to itself while it runs.
- ``exclusive_fleet``: for a module that must be the only reconciler of its fleet (it
  reconciles a whole spec tree, prunes included, and reads back everything on the host)
  or that stops its clusters or breaks their nodes. Its member clusters are those of
  ``tests/reconciler/fixtures/{repo,failover,nodes}/platform``; each module starts on it as
  ``fleet up`` left it (:func:`tests.support.fleet.reset`).

Both run the ``test`` timer profile (``$PINCOMPILE_FLEET_PROFILE``: short controller
timers; tests read them with :func:`tests.support.fleet.timer`). The modules that use a
fleet come one after another (``pytest_collection_modifyitems``); under ``make test``'s
xdist workers the groups run side by side (their tests mostly wait), with the unit tests
filling the workers' time around them. The first run builds the binaries (cached
afterwards). Without Go (and without cached binaries) the e2e tests are skipped; with
``CI=true`` that is an error instead.
"""

from __future__ import annotations

import contextlib
import fcntl
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
#: each e2e module's xdist group, by path (``_groups``)
GROUP_OF: dict[str, str] = {}
#: the session fleet's groups this process ran modules of (since it last said so)
RAN: set[str] = set()
#: the session fleet, once this process has it (:func:`_shared`)
SHARED: list[fleet_mod.FleetState] = []
#: seconds a module waited for the session fleet (its start, its turn), by path
WAITED: dict[str, float] = {}
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
    """Fold every "no toolchain" skip into ONE summary line (pytest groups by location);
    tell the module's seconds (:func:`pytest_runtest_logreport`) how long it waited for
    the session fleet (to start, or for its turn)."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    waited = WAITED.pop(module_path(item.nodeid), 0.0)
    if waited:
        report.user_properties.append(("fleet_wait", waited))
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


def module_path(nodeid: str) -> str:
    """The path of the module a test id names (``tests/x/test_y.py``)."""
    return nodeid.split("::", 1)[0]


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


#: the xdist group of the exclusive fleet's modules and of those with fleets of their own
EXCLUSIVE_GROUP = "exclusive-fleet"
#: the session fleet's modules are this many groups, run side by side on the one fleet
SESSION_GROUPS = 2
#: seconds each e2e module took in the last runs on this machine (what the session
#: fleet's modules are divided by); a module not in it counts this many per test
SECONDS_FILE = "e2e-module-seconds.json"
UNKNOWN_SECONDS_PER_TEST = 10.0


def _module_seconds() -> dict[str, float]:
    try:
        found = json.loads((build.cache_root() / SECONDS_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in found.items()} if isinstance(found, dict) else {}


def _groups(ordered: list[list[pytest.Item]]) -> dict[str, str]:
    """Each e2e module's xdist group, by path: the session fleet's modules divided into
    :data:`SESSION_GROUPS` groups of about equal time (by the seconds they took last time;
    a ``fleet_alone`` module holds both groups up, so only the others are balanced), the
    rest in :data:`EXCLUSIVE_GROUP`."""
    known = _module_seconds()
    groups: dict[str, str] = {}
    session: list[tuple[float, str]] = []
    for module in ordered:
        path, order = module_path(module[0].nodeid), _fleet_order(module)
        if order == 3:
            alone = any(i.get_closest_marker("fleet_alone") for i in module)
            seconds = known.get(path, UNKNOWN_SECONDS_PER_TEST
                                * sum(_uses(item, "fleet") for item in module))
            session.append((0.0 if alone else seconds, path))
        elif order:
            groups[path] = EXCLUSIVE_GROUP
    loads = [0.0] * SESSION_GROUPS
    for seconds, path in sorted(session, key=lambda s: (-s[0], s[1])):
        lightest = loads.index(min(loads))
        loads[lightest] += seconds
        groups[path] = f"session-fleet-{lightest + 1}"
    return groups


def _groups_file() -> Path:
    """Where xdist's workers tell its scheduler each e2e module's group (the scheduler
    sees test ids only)."""
    return Path(tempfile.gettempdir()) / f"pincompile-e2e-groups-{os.environ[RUN_ENV]}.json"


@pytest.hookimpl(optionalhook=True)  # an xdist hook: without xdist it is never called
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup``: each e2e module's group (:func:`_groups`) is one unit of work,
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
            return self.groups.get(module_path(nodeid), nodeid)

    return FleetGroups(config, log)


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected what they do
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Order the modules, a module's tests together and in file order.

    One process: the modules without e2e tests first, then those with fleets of their
    own, then those on the exclusive fleet, then those on the session fleet (each group in
    collection order): no fleet runs idle beside the unit tests, and each fleet (started
    by its first user, stopped after its last) runs beside no other fleet.

    Under ``pytest -n N --dist loadgroup`` (``make test``): each group of e2e modules
    (:func:`_groups`) is one unit of work, run by one worker in that order, the largest
    first (``pytest_xdist_make_scheduler``), while the unit tests fill the workers' time
    around them."""
    modules: dict[object, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.getparent(pytest.Module) or item, []).append(item)
    ordered = sorted(modules.values(), key=_fleet_order)
    groups = _groups(ordered)
    GROUP_OF.update(groups)
    if hasattr(config, "workerinput"):  # an xdist worker: tell the scheduler the groups
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
    down (those modules come one after another: ``pytest_collection_modifyitems``). The
    session fleet is shared: this process says which of its groups it is done with, and
    the last to be done stops it."""
    if _module(item) in USERS["exclusive_fleet"] and \
            _module(nextitem) not in USERS["exclusive_fleet"]:
        _stop_started("exclusive_fleet")
    if _module(item) in USERS["fleet"]:
        RAN.add(GROUP_OF.get(module_path(item.nodeid), ""))
        if _module(nextitem) not in USERS["fleet"]:
            _done_with_shared(RAN)
            RAN.clear()


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault(RUN_ENV, str(os.getpid()))  # xdist's workers inherit it


def pytest_unconfigure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        _groups_file().unlink(missing_ok=True)
        _stop_shared()  # a worker died before it was done with it: nobody else will


def _starts_file() -> Path:
    """Where every process of this run notes when it started and stopped each fleet
    (``TAG start|stop EPOCH`` lines)."""
    return build.cache_root() / f"e2e-fleet-starts-{os.environ[RUN_ENV]}.txt"


def _note(tag: str, what: str) -> None:
    with open(_starts_file(), "a") as out:
        out.write(f"{tag} {what} {time.time():.0f}\n")


#: seconds spent per test module (setup, call and teardown), as the reports arrive
MODULE_SECONDS: dict[str, float] = {}
#: the worker that ran each module (``gw0`` ...), under xdist
MODULE_WORKER: dict[str, str] = {}
#: the e2e modules among them
E2E_MODULES: set[str] = set()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Add up each module's seconds, but for those it waited for the session fleet."""
    module = module_path(report.nodeid)
    waited = sum(v for k, v in report.user_properties if k == "fleet_wait")
    MODULE_SECONDS[module] = MODULE_SECONDS.get(module, 0.0) + report.duration - waited
    worker = getattr(report, "node", None)
    if worker is not None:
        MODULE_WORKER[module] = worker.gateway.id
    if "e2e" in report.keywords:
        E2E_MODULES.add(module)


def _keep_module_seconds() -> None:
    """Note what each e2e module took, for the next run's groups (:func:`_groups`)."""
    if not E2E_MODULES:
        return
    known = _module_seconds() | {m: round(MODULE_SECONDS[m], 1) for m in E2E_MODULES}
    path = build.cache_root() / SECONDS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f"{path.name}.{os.getpid()}")
    scratch.write_text(json.dumps(known, indent=1, sort_keys=True))
    scratch.replace(path)


def _module_times(terminalreporter: Any, slowest: int = 15) -> None:
    """Seconds per worker and the slowest modules (each fleet's modules run one after
    another on one worker: that worker's total is the run's critical path)."""
    if not MODULE_SECONDS:
        return
    by_worker: dict[str, float] = {}
    for module, seconds in MODULE_SECONDS.items():
        worker = MODULE_WORKER.get(module, "main")
        by_worker[worker] = by_worker.get(worker, 0.0) + seconds
    terminalreporter.write_line("test seconds per worker: " + ", ".join(
        f"{worker} {seconds:.0f} s" for worker, seconds in sorted(by_worker.items())))
    ranked = sorted(MODULE_SECONDS.items(), key=lambda item: -item[1])[:slowest]
    terminalreporter.write_line("slowest modules: " + ", ".join(
        f"{module} {seconds:.0f} s ({MODULE_WORKER.get(module, 'main')})"
        for module, seconds in ranked))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say how many fleets this run started and how long each was up (the longest is the
    run's critical path: its modules run one after another on one worker), and where the
    test time went."""
    if hasattr(terminalreporter.config, "workerinput"):
        return
    _module_times(terminalreporter)
    _keep_module_seconds()
    path = _starts_file()
    if not path.exists():
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
def e2e_toolchain(pytestconfig: pytest.Config, request: pytest.FixtureRequest) -> Path:
    """The fleet's binary directory; skips (or fails under CI=true) without Go. (A first
    run's build is waiting, not its first module's work: left out of its seconds.)"""
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
    _waited(request._pyfuncitem.nodeid, time.monotonic() - start)
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


def _start(clusters: Path | list[Path], tag: str, echo: Callable[[str], None],
           directory: Path | None = None) -> fleet_mod.FleetState:
    """Start a fleet of ``clusters`` (a folder or file of Cluster specs, or several
    files) for this session, in ``directory`` (default: :func:`new_fleet_dir`); stopped
    by :func:`_stop_started`."""
    _reap_leftover_fleets(build.cache_root())
    directory = directory or new_fleet_dir(tag)
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


def _shared_dir() -> Path:
    """The session fleet's directory: one per run (named by the run's first process, which
    outlives every worker), whichever process starts it."""
    return build.cache_root() / f"fleet-e2e-fleet-{os.environ[RUN_ENV]}"


@contextlib.contextmanager
def _locked(path: Path, mode: int = fcntl.LOCK_EX) -> Iterator[None]:
    """``path`` flock'ed (exclusive, or ``fcntl.LOCK_SH``) across this run's processes."""
    with open(path, "a") as handle:
        fcntl.flock(handle, mode)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _shared(echo: Callable[[str], None]) -> fleet_mod.FleetState:
    """The session fleet: started by the first process that asks, found by the others (a
    failed start is not tried again: every process fails with its reason)."""
    directory = _shared_dir()
    failed = directory.with_name(directory.name + ".failed")
    with _locked(directory.with_name(directory.name + ".lock")):
        if failed.exists():
            pytest.fail(failed.read_text(), pytrace=False)
        state = fleet_mod.read_state(directory) if directory.exists() else None
        if state is None:
            try:
                state = _start(clusters_path(), "fleet", echo, directory)
            except BaseException as exc:
                failed.write_text(f"the session fleet did not start: {exc}")
                raise
        SHARED.append(state)
        return state


def _done_with_shared(groups: set[str]) -> None:
    """This process ran its last module of ``groups`` on the session fleet: stop it once
    every group of the run is done (under xdist another process may still use it)."""
    directory = _shared_dir()
    every = {g for g in GROUP_OF.values() if g.startswith("session-fleet")} | groups
    with _locked(directory.with_name(directory.name + ".lock")):
        done_file = directory.with_name(directory.name + ".done")
        done = set(done_file.read_text().split()) if done_file.exists() else set()
        done |= groups
        done_file.write_text("\n".join(sorted(done)))
        if done >= every:
            _stop_shared()


def _stop_shared() -> None:
    directory = _shared_dir()
    STARTED[directory] = "fleet"
    _stop_started("fleet")
    for suffix in (".failed", ".done", ".lock", ".gate", ".turn"):
        directory.with_name(directory.name + suffix).unlink(missing_ok=True)


@pytest.fixture(scope="session")
def fleet(e2e_toolchain: Path, pytestconfig: pytest.Config, request: pytest.FixtureRequest
          ) -> fleet_mod.FleetState:
    """A running fleet (host + one control plane per Cluster spec) for the session,
    shared by this run's processes."""
    start = time.monotonic()
    try:
        return _shared(terminal_echo(pytestconfig))
    finally:
        _waited(request._pyfuncitem.nodeid, time.monotonic() - start)  # its first user


def _waited(nodeid: str, seconds: float) -> None:
    module = module_path(nodeid)
    WAITED[module] = WAITED.get(module, 0.0) + seconds


@pytest.fixture(scope="module", autouse=True)
def _fleet_turn(request: pytest.FixtureRequest) -> Iterator[None]:
    """While a module on the session fleet runs: the fleet shared with the other group's
    modules, or, for a module marked ``fleet_alone("why")``, to itself (it waits for the
    module running beside it to end, and the next waits for it; one that waits to be
    alone goes before those that come after it)."""
    if request.node not in USERS["fleet"]:
        yield
        return
    base = _shared_dir()
    gate, turn = (base.with_name(base.name + suffix) for suffix in (".gate", ".turn"))
    start = time.monotonic()
    alone = request.node.get_closest_marker("fleet_alone")
    with _locked(gate) if alone else contextlib.nullcontext():
        if not alone:
            with _locked(gate, fcntl.LOCK_SH):
                pass
        with _locked(turn, fcntl.LOCK_EX if alone else fcntl.LOCK_SH):
            _waited(request.node.nodeid, time.monotonic() - start)
            _refresh_shared()
            yield


def _refresh_shared() -> None:
    """This process's copy of the session fleet's processes as recorded now (a
    ``fleet_alone`` module of another process may have restarted a component)."""
    for state in SHARED:
        current = fleet_mod.read_state(state.dir)
        if current is not None:
            state.procs[:] = current.procs


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
