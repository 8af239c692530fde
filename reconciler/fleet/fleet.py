"""Bring a local fleet up and take it down again (stopping and starting one component of
a running fleet: :mod:`reconciler.fleet.control`).

Layout of a fleet directory (default ``${PINCOMPILE_CACHE:-~/.cache/pincompile}/fleet``)::

    state.json        what runs: ports, pids (+ start times), versions, contexts
    kubeconfig        contexts `host` and one per Cluster (spec.context)
    pki/              self-signed CA, serving and client certs, SA signing key
    etcd/             the one etcd's data; each control plane has its own --etcd-prefix
    clusters/<name>/  component kubeconfigs
    logs/             one log file per process
    clusters/<name>/training-operator-tmp/  the training operator's TMPDIR (webhook certs)
    pods/             each pod's log files, kwok's exec configuration (debugging.py)

The directory is private to the fleet's user (exec'd commands run as another, see
:mod:`.debugging`); the pods' scratch directories are outside it
(``$TMPDIR/pincompile-exec-*``, recorded as ``exec_dir``).

One pod agent serves every cluster's kubelet endpoint and keeps each pod's log
(:mod:`reconciler.fleet.pod_agent`). Every member cluster (not the host) also runs a
metrics-server (see :mod:`reconciler.fleet.metrics`), so HPAs on CPU and memory and
``kubectl top`` work, and every member cluster that lists the ``kubeflow-training`` addon
runs the Kubeflow training operator (:mod:`reconciler.fleet.training`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from reconciler.fleet import addons, build, debugging, metrics, profiles, storage, training
from reconciler.fleet.certs import Pki, generate_pki
from reconciler.fleet.clusters import ClusterSpec, ClusterSpecError, load_clusters
from reconciler.fleet.components import (
    STAGES,
    USAGE,
    apiserver_args,
    controller_manager_args,
    environment,
    etcd_args,
    etcd_url,
    kwok_args,
    launch,
    pod_agent_args,
    scheduler_args,
)
from reconciler.fleet.control import (
    APISERVER_TIMEOUT,
    node_monitor_grace_period,
    parse_go_duration,
    start_component,
    stop_component,
)
from reconciler.fleet.errors import FleetError
from reconciler.fleet.kubeconfig import (
    api_client,
    cluster_dir,
    kubeconfig_of,
    write_kubeconfig,
)
from reconciler.fleet.nodes import generate_nodes, host_cluster
from reconciler.fleet.ports import claim_ports, release_ports
from reconciler.fleet.processes import (
    Proc,
    client_ssl_context,
    is_alive,
    log_tail,
    spawn,
    stop,
    wait_until_ready,
)
from reconciler.fleet.state import (
    COMPONENTS,
    HOST,
    LOCK_FILE,
    STATE_FILE,
    ClusterRuntime,
    FleetState,
    default_dir,
    dir_lock,
    is_running,
    port_registry,
    read_state,
)

#: what other modules and tests reach through this module (defined in its neighbours;
#: ``stop_component``/``start_component``/``node_monitor_grace_period``: :mod:`.control`)
__all__ = [
    "COMPONENTS", "HOST", "STAGES", "STATE_FILE", "USAGE",
    "ClusterRuntime", "FleetState", "api_client", "apiserver_args",
    "controller_manager_args", "default_dir", "down", "is_running", "kwok_args",
    "node_monitor_grace_period", "parse_go_duration", "port_registry", "read_state",
    "scheduler_args", "start_component", "stop_component", "stop_fleet", "up",
    "write_kubeconfig",
]

SETTLE_TIMEOUT = 120.0

#: shutdown order: clients of the apiservers first, etcd last (all at once is slower)
STOP_ORDER = ("pod-agent", "training-operator", "metrics-server", "kwok", "kube-scheduler",
              "kube-controller-manager", "kube-apiserver", "etcd")

Echo = Callable[[str], None]


def stop_fleet(procs: list[Proc]) -> list[Proc]:
    """Stop the processes in :data:`STOP_ORDER`; return those that still run."""
    def rank(proc: Proc) -> int:
        name = proc.name.split("[", 1)[0]
        return STOP_ORDER.index(name) if name in STOP_ORDER else 0

    left: list[Proc] = []
    for group in sorted({rank(p) for p in procs}):
        left += stop([p for p in procs if rank(p) == group])
    return left


def _clusters(count: int) -> str:
    return f"{count} cluster{'' if count == 1 else 's'}"


@contextlib.contextmanager
def _step(label: str, echo: Echo, timings: dict[str, float]) -> Iterator[None]:
    start = time.monotonic()
    yield
    took = time.monotonic() - start
    timings[label] = round(took, 2)
    echo(f"  {label:<38} {took:6.1f}s")


def _clean(directory: Path, state: FleetState | None = None) -> None:
    """Remove everything ``up`` creates in ``directory`` (not the lock file) and the pods'
    scratch directories ``state`` records."""
    if state is not None and state.exec_dir:
        shutil.rmtree(state.exec_dir, ignore_errors=True)
    for child in directory.iterdir():
        if child.name == LOCK_FILE:
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


def _create_nodes(state: FleetState, specs: dict[str, ClusterSpec]) -> None:
    """Create every cluster's kwok Node objects, addon CRDs and storage classes (the
    clusters in parallel: each is a few dozen requests to its own API server)."""
    with ThreadPoolExecutor(max_workers=min(8, len(state.clusters))) as pool:
        futures = [pool.submit(_create_cluster_objects, state, runtime, specs[runtime.name])
                   for runtime in state.clusters]
        for future in futures:
            future.result()


def _create_cluster_objects(state: FleetState, runtime: ClusterRuntime,
                            spec: ClusterSpec) -> None:
    """One cluster's kwok Node objects, addon CRDs and storage classes."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    api = api_client(state, runtime.context)
    try:
        core: Any = client.CoreV1Api(api)
        nodes = generate_nodes(spec, general_nodes=1 if runtime.name == HOST else 3)
        for node in nodes:
            core.create_node(body=node)
            # status is not always kept on create; set it explicitly (kwok keeps it)
            core.patch_node_status(node["metadata"]["name"], {"status": node["status"]})
        runtime.nodes = [n["metadata"]["name"] for n in nodes]
        crds: Any = client.ApiextensionsV1Api(api)
        crds.create_custom_resource_definition(body=debugging.logs_crd())
        addons.install(api, spec.addons, Path(state.bin_dir))
        if runtime.training_operator_port:
            training.prepare(api)
        storage.install(api)
    except ApiException as exc:
        raise FleetError(f"cluster {runtime.name}: creating nodes failed: "
                         f"{exc.status} {exc.reason}") from exc
    finally:
        api.close()


def _register_metrics(state: FleetState) -> None:
    """Register each member cluster's metrics-server as its ``metrics.k8s.io`` API."""
    from kubernetes.client.rest import ApiException

    pki = Pki(state.dir / "pki")
    for runtime in state.clusters:
        if not runtime.metrics_server_port:
            continue
        api = api_client(state, runtime.context)
        try:
            metrics.register(api, runtime.metrics_server_port, pki)
        except ApiException as exc:
            raise FleetError(f"cluster {runtime.name}: registering metrics-server failed: "
                             f"{exc.status} {exc.reason}") from exc
        finally:
            api.close()


def _wait_settled(state: FleetState, timeout: float) -> None:
    """Wait until every cluster's nodes are Ready, its default ServiceAccount exists and
    (member clusters) its metrics API is Available."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    deadline = time.monotonic() + timeout
    pending = list(state.clusters)
    clients = {r.name: api_client(state, r.context) for r in pending}
    why = ""
    try:
        while pending:
            for proc in state.procs:
                if not is_alive(proc):
                    raise FleetError(f"{proc.name} exited during startup (log: {proc.log})",
                                     log_tail(proc.log))
            still = []
            for runtime in pending:
                core: Any = client.CoreV1Api(clients[runtime.name])
                try:
                    nodes = core.list_node(label_selector="type=kwok").items
                    ready = [n.metadata.name for n in nodes if any(
                        c.type == "Ready" and c.status == "True"
                        for c in (n.status.conditions or []))]
                    if len(ready) < len(runtime.nodes):
                        why = f"{runtime.name}: {len(ready)}/{len(runtime.nodes)} nodes Ready"
                        still.append(runtime)
                        continue
                    core.read_namespaced_service_account("default", "default")
                    reason = (metrics.unavailable_reason(clients[runtime.name])
                              if runtime.metrics_server_port else None)
                    if reason:
                        why = f"{runtime.name}: {reason}"
                        still.append(runtime)
                except ApiException as exc:
                    why = f"{runtime.name}: {exc.status} {exc.reason}"
                    still.append(runtime)
            pending = still
            if pending and time.monotonic() > deadline:
                culprit = "metrics-server" if "APIService" in why else "kwok"
                kwok = next((p for p in state.procs if p.name.startswith(culprit)), None)
                tail = log_tail(kwok.log) if kwok else ""
                raise FleetError(f"fleet did not settle within {timeout:.0f}s ({why})", tail)
            if pending:
                time.sleep(0.5)
    finally:
        for api in clients.values():
            api.close()


def up(clusters_path: str | Path, directory: str | Path | None = None,
       echo: Echo = print, progress: Echo | None = None, every: float = 30.0,
       profile: str | None = None) -> FleetState:
    """Start the fleet (no-op when it already runs). Raises FleetError/ClusterSpecError,
    ValueError for an unknown profile.

    ``profile`` names its timer profile (:mod:`.profiles`; default:
    ``$PINCOMPILE_FLEET_PROFILE``, else Kubernetes' defaults). A first build of the
    binaries reports its progress through ``progress`` (default: ``echo``) every ``every``
    seconds.
    """
    timers = profiles.profile(profile)
    directory = Path(directory or default_dir()).expanduser().resolve()
    specs_list = load_clusters(clusters_path)
    if not specs_list:
        raise ClusterSpecError(f"{clusters_path}: no `kind: Cluster` documents found")
    for spec in specs_list:
        if HOST in (spec.name, spec.context):
            raise ClusterSpecError(f"{spec.source}: the name/context {HOST!r} is reserved "
                                   "for the fleet's host control plane")
    with dir_lock(directory):
        old = read_state(directory)
        if old is not None and is_running(old):
            echo(f"fleet already up in {directory} ({_clusters(len(old.clusters) - 1)} + host)")
            wanted = {HOST, *(s.name for s in specs_list)}
            if wanted != {c.name for c in old.clusters}:
                echo(f"note: it runs the clusters of {old.clusters_path}, not those of "
                     f"{clusters_path}; run `pincompile fleet down` first to change them")
            if old.profile != timers.name:
                echo(f"note: it runs the {old.profile!r} profile, not {timers.name!r}; run "
                     "`pincompile fleet down` first to change it")
            echo(f"kubeconfig: {old.kubeconfig}")
            return old
        if old is not None:
            echo(f"cleaning up a stopped or broken fleet in {directory}")
            stop_fleet(old.procs)
            release_ports(port_registry(), str(directory))
            _clean(directory, old)
        timings: dict[str, float] = {}
        total = time.monotonic()
        echo(f"starting fleet in {directory} (profile {timers.describe()})")
        with _step("binaries (build or cache)", echo, timings):
            bins = build.ensure_binaries(echo=echo, progress=progress, every=every)
        _clean(directory)
        specs = {HOST: host_cluster(), **{s.name: s for s in specs_list}}
        state = FleetState(dir=directory, owner_pid=os.getpid(), bin_dir=str(bins),
                           versions=build.versions(),
                           clusters_path=str(Path(clusters_path).resolve()),
                           started_at=time.time(), timings=timings, profile=timers.name)
        state.save()
        try:
            _start(state, specs, echo, timings)
        except BaseException:
            stop_fleet(state.procs)
            release_ports(port_registry(), str(directory))
            (directory / STATE_FILE).unlink(missing_ok=True)  # the logs stay, to read
            shutil.rmtree(state.exec_dir, ignore_errors=True)
            raise
        timings["total"] = round(time.monotonic() - total, 2)
        state.phase = "up"
        state.save()
        echo(f"fleet up in {timings['total']:.1f}s: {_clusters(len(specs_list))} + host, "
             f"{len(state.procs)} processes")
        echo(f"kubeconfig: {state.kubeconfig}")
        echo(f"  contexts: {', '.join(r.context for r in state.clusters)}")
        echo(f"  use it: export KUBECONFIG={state.kubeconfig}")
        if shutil.which("kubectl"):
            echo(f"  try: kubectl --context {state.clusters[-1].context} get nodes")
        return state


#: apiserver, controller-manager, scheduler, kwok, metrics-server, training operator x2,
#: the kubelet front
PER_CLUSTER_PORTS = 8


def _start(state: FleetState, specs: dict[str, ClusterSpec], echo: Echo,
           timings: dict[str, float]) -> None:
    directory = state.dir
    env = environment()
    logs = directory / "logs"
    with _step("certificates", echo, timings):
        directory.chmod(0o700)  # the fleet's files: no other user's, an exec'd command's
        pki = generate_pki(directory / "pki")
        user = debugging.exec_user()
        state.exec_dir = str(debugging.make_exec_root())
        debugging.write_kwok_config(directory, Path(state.exec_dir), user)
    with _step("ports", echo, timings):
        ports = claim_ports(port_registry(), str(directory),
                            2 + PER_CLUSTER_PORTS * len(specs))
    state.etcd_port, state.etcd_peer_port = ports[0], ports[1]
    for i, (name, spec) in enumerate(specs.items()):
        p = ports[2 + PER_CLUSTER_PORTS * i: 2 + PER_CLUSTER_PORTS * (i + 1)]
        member = name != HOST
        trains = member and training.ADDON in spec.addons
        state.clusters.append(ClusterRuntime(name=name, context=spec.context, port=p[0],
                                             controller_manager_port=p[1],
                                             scheduler_port=p[2], kwok_port=p[3],
                                             metrics_server_port=p[4] if member else 0,
                                             training_operator_port=p[5] if trains else 0,
                                             training_webhook_port=p[6] if trains else 0,
                                             kubelet_port=p[7],
                                             etcd_prefix=f"/pincompile/{name}"))
    state.save()
    write_kubeconfig(state.kubeconfig, [(r.context, r.server) for r in state.clusters],
                     pki, "admin")

    with _step("etcd", echo, timings):
        etcd = spawn("etcd", etcd_args(state, pki), logs / "etcd.log", env=env)
        state.procs.append(etcd)
        state.save()
        wait_until_ready([(etcd, f"{etcd_url(state)}/health", client_ssl_context(
            pki.ca_cert, pki.etcd_cert, pki.etcd_key))], timeout=60)

    with _step(f"kube-apiserver x{len(state.clusters)}", echo, timings):
        waits = [launch(state, runtime, "kube-apiserver", env) for runtime in state.clusters]
        state.procs += [proc for proc, _, _ in waits]
        state.save()
        wait_until_ready(waits, timeout=APISERVER_TIMEOUT)

    with _step("nodes, CRDs, storage classes", echo, timings):
        _create_nodes(state, specs)

    with _step("controllers, kwok, metrics, training", echo, timings):
        waits = []
        for runtime in state.clusters:
            for who in ("controller-manager", "scheduler", "kwok", "metrics-server",
                        "training-operator"):
                path = kubeconfig_of(state, runtime, who)
                path.parent.mkdir(parents=True, exist_ok=True)
                write_kubeconfig(path, [(runtime.context, runtime.server)], pki, who,
                                 embed=False)
            if runtime.training_operator_port:
                training.write_certificates(cluster_dir(state, runtime), pki)
            for component in runtime.components[1:]:
                waits.append(launch(state, runtime, component, env))
        agent = spawn("pod-agent", pod_agent_args(state), logs / "pod-agent.log", env=env)
        waits.append((agent, f"https://127.0.0.1:{state.clusters[0].kubelet_port}/healthz",
                      client_ssl_context(pki.ca_cert, pki.client_cert("admin"),
                                         pki.client_key("admin"))))
        state.procs += [proc for proc, _, _ in waits]
        state.save()
        wait_until_ready(waits, timeout=SETTLE_TIMEOUT)
        _register_metrics(state)

    with _step("nodes Ready, metrics API, service accounts", echo, timings):
        _wait_settled(state, timeout=SETTLE_TIMEOUT)


def down(directory: str | Path | None = None, echo: Echo = print) -> bool:
    """Stop every process the fleet in ``directory`` recorded and remove its state.

    Returns False when there was no fleet to stop.
    """
    directory = Path(directory or default_dir()).expanduser().resolve()
    if not (directory / STATE_FILE).exists():
        echo(f"no fleet in {directory}")
        return False
    with dir_lock(directory):
        state = read_state(directory)
        if state is None:
            echo(f"no fleet in {directory}")
            return False
        start = time.monotonic()
        left = stop_fleet(state.procs)
        if left:
            raise FleetError("could not stop: " + ", ".join(f"{p.name} (pid {p.pid})"
                                                            for p in left))
        release_ports(port_registry(), str(directory))
        _clean(directory, state)
        echo(f"fleet in {directory} stopped ({len(state.procs)} processes) "
             f"in {time.monotonic() - start:.1f}s")
        return True
