"""``kubectl logs`` and ``kubectl exec`` for the fleet's pods, through the real API servers.

A kube-apiserver serves a pod's ``log`` and ``exec`` subresources by calling the kubelet
of the pod's node; the fleet's nodes report their cluster's kwok as that kubelet
(``--node-port``, HTTPS with the fleet's serving certificate), and kwok answers from this
per-fleet configuration:

- ``ClusterLogs``: every container's log is ``pods/containers.log`` in the fleet
  directory, in the CRI log format a kubelet reads; the fleet's ``pod-log-writer`` process
  appends a line to it every 2 s, so ``kubectl logs -f`` streams.
- ``ClusterExec``: ``kubectl exec`` runs the command **on this machine** as the fleet's
  user, in the sandbox directory ``pods/sandbox`` with a minimal environment; there is no
  container. That is all a local fleet offers (its users are the machine's user anyway).
"""

from __future__ import annotations

from pathlib import Path

import yaml

#: one line every this many seconds
LOG_INTERVAL = 2
LOG_WRITER = "pod-log-writer"

_WRITER = r"""i=0
while :; do
  i=$((i + 1))
  printf '%s stdout F pincompile fleet: pod log line %d\n' "$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)" "$i"
  sleep {interval}
done"""


def pods_dir(fleet_dir: Path) -> Path:
    return fleet_dir / "pods"


def log_file(fleet_dir: Path) -> Path:
    """The file every container's log comes from."""
    return pods_dir(fleet_dir) / "containers.log"


def sandbox(fleet_dir: Path) -> Path:
    """Where ``kubectl exec`` runs its command."""
    return pods_dir(fleet_dir) / "sandbox"


def kwok_config(fleet_dir: Path) -> Path:
    """kwok's ClusterLogs/ClusterExec configuration of the fleet."""
    return pods_dir(fleet_dir) / "kwok-debugging.yaml"


def write_kwok_config(fleet_dir: Path) -> Path:
    """Create the log file, the sandbox and :func:`kwok_config`; return its path."""
    sandbox(fleet_dir).mkdir(parents=True, exist_ok=True)
    log_file(fleet_dir).touch()
    docs = [
        {"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "ClusterLogs",
         "metadata": {"name": "pincompute-logs"},
         "spec": {"logs": [{"logsFile": str(log_file(fleet_dir)), "follow": True}]}},
        {"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "ClusterExec",
         "metadata": {"name": "pincompute-exec"},
         "spec": {"execs": [{"local": {
             "workDir": str(sandbox(fleet_dir)),
             "envs": [{"name": "PATH", "value": "/usr/local/bin:/usr/bin:/bin"},
                      {"name": "HOME", "value": str(sandbox(fleet_dir))}]}}]}},
    ]
    path = kwok_config(fleet_dir)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


def log_writer_argv() -> list[str]:
    """Command line of the process that keeps appending to :func:`log_file` (stdout)."""
    return ["/bin/sh", "-c", _WRITER.format(interval=LOG_INTERVAL)]
