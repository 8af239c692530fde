"""The fleet's pod agent: for every cluster, the kubelet front its nodes report
(:mod:`.kubelet_front`: exec in each pod's scratch directory, sessions that end with their
connection) and each pod's own log (:mod:`.pod_logs`).

``python -m reconciler.fleet.pod_agent FLEET_DIR`` runs until SIGTERM; ``fleet up``
starts it as the process ``pod-agent``.
"""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
import signal
import ssl
import sys
import threading
from pathlib import Path

from reconciler.fleet import debugging, sessions
from reconciler.fleet.certs import Pki
from reconciler.fleet.kubeconfig import api_client
from reconciler.fleet.kubelet_front import Cluster, Front
from reconciler.fleet.pod_logs import PodLogs
from reconciler.fleet.state import ClusterRuntime, FleetState, read_state

NAME = "pod-agent"


def contexts(pki: Pki) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """(the fronts' server side: the fleet's serving certificate, clients must show one of
    the fleet CA; the client side towards kwok: verifies kwok's certificate)."""
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(pki.ca_cert))
    server.load_cert_chain(str(pki.serving_cert), str(pki.serving_key))
    server.verify_mode = ssl.CERT_REQUIRED
    client = ssl.create_default_context(cafile=str(pki.ca_cert))
    for ctx in (server, client):
        ctx.set_alpn_protocols(["http/1.1"])
    return server, client


def kwok_pids(fleet_dir: Path, cluster: str) -> tuple[set[int], int | None]:
    """(kwok's pid, if it runs; its reaper's pid) for one cluster, as ``state.json``
    records them now (kwok may have been restarted)."""
    state = read_state(fleet_dir)
    if state is None:
        return set(), None
    reaper = next((p.pid for p in state.procs if p.name == f"kwok[{cluster}]"), None)
    if reaper is None:
        return set(), None
    table = sessions.process_table()
    return {p.pid for p in table.values() if p.ppid == reaper
            and sessions.command_line(p.pid)[:1] == [f"{state.bin_dir}/kwok"]}, reaper


def _cluster(state: FleetState, runtime: ClusterRuntime, front: Front,
             user: debugging.ExecUser | None) -> tuple[Cluster, PodLogs]:
    root = Path(state.exec_dir)

    def gone(namespace: str, pod: str) -> None:
        """A pod was deleted: its sessions end, its scratch directory goes."""
        front.end_pod(cluster, namespace, pod)
        shutil.rmtree(root / runtime.name / namespace / pod, ignore_errors=True)

    logs = PodLogs(runtime.name, state.dir,
                   functools.partial(api_client, state, runtime.context), gone,
                   echo=lambda line: print(line, flush=True))
    cluster = Cluster(runtime.name, runtime.kubelet_port, runtime.kwok_port,
                      functools.partial(debugging.scratch_dir, root, user, runtime.name),
                      logs.ready, functools.partial(kwok_pids, state.dir, runtime.name))
    return cluster, logs


def main(fleet_dir: Path) -> int:
    """Serve every cluster's front and keep every pod's log until SIGTERM."""
    state = read_state(fleet_dir)
    if state is None:
        print(f"{NAME}: no fleet in {fleet_dir}", file=sys.stderr)
        return 3
    user = debugging.exec_user()
    server, client = contexts(Pki(fleet_dir / "pki"))
    front = Front([], server, client, user.uid if user else os.getuid())
    logs = []
    for runtime in state.clusters:
        cluster, pod_logs = _cluster(state, runtime, front, user)
        front.clusters.append(cluster)
        logs.append(pod_logs)
    stop = threading.Event()
    threads = [threading.Thread(target=log.run, args=(stop,), daemon=True) for log in logs]
    threads.append(threading.Thread(target=_write_logs, args=(logs, stop), daemon=True))
    for thread in threads:
        thread.start()

    async def serve() -> None:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, task.cancel)  # type: ignore[union-attr]
        await front.serve(lambda: print(f"{NAME}: serving", flush=True))

    try:
        asyncio.run(serve())
    except asyncio.CancelledError:
        pass
    finally:
        stop.set()
    return 0


def _write_logs(logs: list[PodLogs], stop: threading.Event) -> None:
    while not stop.wait(debugging.LOG_INTERVAL):
        for pod_logs in logs:
            pod_logs.write()


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
