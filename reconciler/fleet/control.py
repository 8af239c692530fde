"""Stop and start one component of a running fleet (failures on purpose), and read the
node controller's grace period from a running kube-controller-manager.

Every change is made under the fleet directory's lock (:func:`.state.dir_lock`) against
the state on disk, so ``state.json`` always records which processes run.
"""

from __future__ import annotations

import json
import re
import ssl
import urllib.request

from reconciler.fleet.certs import Pki
from reconciler.fleet.components import environment, launch
from reconciler.fleet.errors import FleetError
from reconciler.fleet.processes import (
    client_ssl_context,
    is_alive,
    stop,
    wait_until_ready,
)
from reconciler.fleet.state import (
    COMPONENTS,
    ClusterRuntime,
    FleetState,
    dir_lock,
    read_state,
)

APISERVER_TIMEOUT = 180.0
#: what watches a member's API server, restarted when it comes back: client-go re-watches a
#: returned API server after a random back-off of up to about a minute, and kwok renews
#: its node Leases from its watch cache (a kubelet reads them afresh), so it fails every
#: renewal until its re-watch; its nodes would go NotReady meanwhile and lose their pods
WATCHERS = ("kwok", "kube-controller-manager", "kube-scheduler")


def parse_go_duration(text: str) -> float:
    """Seconds in a Go duration string (``50s``, ``1m30s``, ``500ms``)."""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6,
             "ns": 1e-9}
    parts = re.findall(r"([0-9.]+)(h|ms|m|s|us|µs|ns)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"not a Go duration: {text!r}")
    return sum(float(number) * units[unit] for number, unit in parts)


def node_monitor_grace_period(state: FleetState, cluster: str) -> float:
    """The node controller's grace period (seconds) as the cluster's running
    kube-controller-manager reports it (``/configz``): how long after a node's last
    heartbeat it marks the node NotReady."""
    runtime = state.cluster(cluster)
    pki = Pki(state.dir / "pki")
    ctx = client_ssl_context(pki.ca_cert, pki.client_cert("admin"), pki.client_key("admin"))
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # self-signed serving cert of the controller-manager
    url = f"https://127.0.0.1:{runtime.controller_manager_port}/configz"
    try:
        with urllib.request.urlopen(url, context=ctx, timeout=10) as resp:
            config = json.load(resp)
        value = config["kubecontrollermanager.config.k8s.io"]["NodeLifecycleController"][
            "NodeMonitorGracePeriod"]
        return parse_go_duration(str(value))
    except (OSError, ValueError, KeyError) as exc:
        raise FleetError(f"cannot read the node monitor grace period from {url}: {exc}"
                         ) from exc


def _component_proc(state: FleetState, cluster: str, component: str) -> tuple[
        ClusterRuntime, int]:
    """The cluster and the index in ``state.procs`` of one component's process."""
    if component not in COMPONENTS:
        raise FleetError(f"unknown component {component!r} (one of: {', '.join(COMPONENTS)})")
    try:
        runtime = state.cluster(cluster)
    except KeyError:
        names = ", ".join(c.name for c in state.clusters)
        raise FleetError(f"no cluster {cluster!r} in the fleet (clusters: {names})") from None
    if component not in runtime.components:
        raise FleetError(f"cluster {runtime.name} runs no {component}")
    name = f"{component}[{runtime.name}]"
    for index, proc in enumerate(state.procs):
        if proc.name == name:
            return runtime, index
    raise FleetError(f"the fleet in {state.dir} has no process {name}")


def _locked_state(state: FleetState) -> FleetState:
    """The state on disk (current), for a change made under the directory lock."""
    current = read_state(state.dir)
    if current is None or current.phase != "up":
        raise FleetError(f"no running fleet in {state.dir}")
    return current


def stop_component(state: FleetState, cluster: str, component: str) -> None:
    """Stop one component of one cluster of a running fleet (SIGTERM, then SIGKILL).

    ``cluster`` is a cluster name or context, ``component`` one of :data:`COMPONENTS`.
    Stopping ``kube-apiserver`` makes the cluster unreachable (connections are refused)
    while its etcd data, controllers and kwok stay; stopping ``kwok`` stops its node
    Lease renewals, so after the node controller's grace period (50 s; 20 s under the
    ``test`` profile) the cluster's nodes go NotReady, its pods are marked not Ready and
    taint-based eviction proceeds as in any cluster (300 s, 30 s under ``test``; not while
    a whole zone is down). ``state`` (and
    ``state.json``) then record the process as stopped, so ``fleet status`` reports the
    fleet as not healthy. Undo with :func:`start_component`. Raises FleetError.
    """
    with dir_lock(state.dir):
        current = _locked_state(state)
        _runtime, index = _component_proc(current, cluster, component)
        left = stop([current.procs[index]])
        if left:
            raise FleetError(f"could not stop {left[0].name} (pid {left[0].pid})")
        current.save()
        state.procs[:] = current.procs


def start_component(state: FleetState, cluster: str, component: str,
                    timeout: float = APISERVER_TIMEOUT) -> None:
    """Start a component stopped by :func:`stop_component` again and wait until it is ready.

    It comes back with the same command line: the same port, certificates, etcd prefix
    and kubeconfig, so clients keep working unchanged (kube-apiserver: ``/readyz``
    answers, then the cluster's :data:`WATCHERS` are restarted so they watch it at once;
    kwok: ``/healthz`` answers, it takes the node Leases over once they have
    expired — at most the profile's Lease duration after the old kwok's last renewal — and
    turns NotReady nodes and their running pods Ready again). A no-op when the component
    runs. Raises FleetError (with the log's tail) when it does not become ready.
    """
    with dir_lock(state.dir):
        current = _locked_state(state)
        runtime, index = _component_proc(current, cluster, component)
        if is_alive(current.procs[index]):
            state.procs[:] = current.procs
            return
        try:
            _relaunch(current, runtime, [(index, component)], timeout)
            if component == "kube-apiserver":
                _restart_watchers(current, runtime, timeout)
        finally:
            state.procs[:] = current.procs


def _restart_watchers(current: FleetState, runtime: ClusterRuntime, timeout: float) -> None:
    """Restart, side by side, the running :data:`WATCHERS` of ``runtime`` (one stopped on
    purpose stays stopped)."""
    running = []
    for name in WATCHERS:
        if name in runtime.components:
            _, at = _component_proc(current, runtime.name, name)
            if is_alive(current.procs[at]):
                running.append((at, name))
    left = stop([current.procs[at] for at, _ in running])
    if left:
        raise FleetError(f"could not restart {left[0].name} (pid {left[0].pid})")
    _relaunch(current, runtime, running, timeout)


def _relaunch(current: FleetState, runtime: ClusterRuntime,
              components: list[tuple[int, str]], timeout: float) -> None:
    """Launch each (index in ``current.procs``, component) anew (each is stopped) and wait
    until they are all ready."""
    waits = []
    for index, component in components:
        proc, url, ctx = launch(current, runtime, component, environment())
        current.procs[index] = proc
        waits.append((proc, url, ctx))
    current.save()
    wait_until_ready(waits, timeout=timeout)

