"""``kubectl logs``, ``exec`` and ``port-forward`` for the fleet's pods: where they lead.

A kube-apiserver serves a pod's ``log``, ``exec`` and ``portforward`` subresources by
calling the kubelet of the pod's node: the fleet's kubelet front (:mod:`.kubelet_front`),
which passes them to the cluster's kwok, which answers from this configuration:

- **logs**: every pod has its own log file per container, in the fleet directory
  (``pods/<cluster>/<namespace>/<pod>/<container>.log``, the CRI format a kubelet reads),
  named by a kwok ``Logs`` object of the pod (:mod:`.pod_logs` creates both when the pod is
  scheduled and appends a line every :data:`LOG_INTERVAL` seconds while it runs);
- **exec** (kwok's ``ClusterExec``): the command runs **on this machine** — there is no
  container — as an unprivileged user (:func:`exec_user`; ``nobody`` when the fleet runs
  as root), in the pod's own scratch directory outside the fleet directory, with a
  minimal environment; it cannot read the fleet's files (the fleet directory is private),
  and its processes end with the session (:mod:`.sessions`, :mod:`.reaper`);
- **port-forward** (kwok's ``ClusterPortForward``): every port of every pod reaches a
  small responder run **on this machine** for each connection, the connection being its
  stdin and stdout (:mod:`.forward_responder`: an HTTP ``GET`` gets a ``200`` naming it,
  other bytes are echoed), as the exec user, in ``/``; it ends when the connection
  closes, or after ten idle minutes. So ``kubectl port-forward POD 8080:80`` and
  ``pincompile port-forward PinApp/PROJECT/NAME 8080:80`` reach something real on the
  fleet, and ``curl localhost:8080`` answers.
"""

from __future__ import annotations

import os
import pwd
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from reconciler.fleet.errors import FleetError

#: one log line every this many seconds
LOG_INTERVAL = 2
#: the kwok kinds read from the clusters (``--enable-crds``), not from the configuration
KWOK_CRDS = ("Logs",)
KWOK_GROUP = "kwok.x-k8s.io"
KWOK_VERSION = "v1alpha1"
#: the user exec runs as when the fleet runs as root (it exists on every Debian machine)
EXEC_USER = "nobody"
PATH = "/usr/local/bin:/usr/bin:/bin"
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


@dataclass(frozen=True)
class ExecUser:
    """Who an exec'd command runs as."""

    name: str
    uid: int
    gid: int


def exec_user() -> ExecUser | None:
    """``nobody`` (with its own group) when the fleet runs as root; None when it does not
    (kwok cannot change users then: exec runs as the fleet's user)."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(EXEC_USER)
    except KeyError:
        raise FleetError(f"there is no user {EXEC_USER!r} on this machine to run `exec` "
                         "on the fleet's pods as") from None
    return ExecUser(EXEC_USER, entry.pw_uid, entry.pw_gid)


def _checked(*names: str) -> tuple[str, ...]:
    for name in names:
        if not _NAME.match(name):
            raise ValueError(f"not a Kubernetes name: {name!r}")
    return names


def pod_dir(fleet_dir: Path, cluster: str, namespace: str, pod: str) -> Path:
    """The directory of one pod's log files."""
    return fleet_dir.joinpath("pods", *_checked(cluster, namespace, pod))


def log_file(fleet_dir: Path, cluster: str, namespace: str, pod: str,
             container: str) -> Path:
    """The log of one container of a pod."""
    return pod_dir(fleet_dir, cluster, namespace, pod) / f"{_checked(container)[0]}.log"


def make_exec_root() -> Path:
    """A new directory for the scratch directories of a fleet's pods, outside the fleet
    directory: the exec user may pass through it, not list it."""
    root = Path(tempfile.mkdtemp(prefix="pincompile-exec-"))
    root.chmod(0o711)
    return root


def scratch_dir(exec_root: Path, user: ExecUser | None, cluster: str, namespace: str,
                pod: str) -> Path:
    """A pod's scratch directory (where its exec'd commands run), created if missing:
    owned by the exec user, private to it."""
    parent = exec_root.joinpath(*_checked(cluster, namespace))
    parent.mkdir(mode=0o711, parents=True, exist_ok=True)
    directory = parent / _checked(pod)[0]
    if not directory.is_dir():
        directory.mkdir(mode=0o700, exist_ok=True)
        if user is not None:
            os.chown(directory, user.uid, user.gid)
    return directory


def kwok_config(fleet_dir: Path) -> Path:
    """kwok's ClusterExec and ClusterPortForward configuration of the fleet."""
    return fleet_dir / "pods" / "kwok-exec.yaml"


def write_kwok_config(fleet_dir: Path, exec_root: Path, user: ExecUser | None) -> Path:
    """Write :func:`kwok_config` (the ClusterExec, then the ClusterPortForward); return
    its path. A command reaching kwok without the front's wrapper runs in ``exec_root``,
    which the exec user cannot write."""
    local: dict[str, Any] = {"workDir": str(exec_root),
                             "envs": [{"name": "PATH", "value": PATH},
                                      {"name": "HOME", "value": str(exec_root)}]}
    if user is not None:
        local["securityContext"] = {"runAsUser": user.uid, "runAsGroup": user.gid}
    doc = {"apiVersion": f"{KWOK_GROUP}/{KWOK_VERSION}", "kind": "ClusterExec",
           "metadata": {"name": "pincompute-exec"}, "spec": {"execs": [{"local": local}]}}
    path = kwok_config(fleet_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all([doc, port_forward_config(user)], sort_keys=False))
    return path


def port_forward_config(user: ExecUser | None) -> dict[str, Any]:
    """kwok's ClusterPortForward of the fleet: every port of every pod (no selector, a
    forward without ports) runs :mod:`.forward_responder` with this interpreter, which
    becomes ``user`` first (when there is one: the fleet runs as root)."""
    responder = Path(__file__).resolve().with_name("forward_responder.py")
    command = [sys.executable, "-I", "-S", str(responder)]
    if user is not None:
        command += [str(user.uid), str(user.gid)]
    return {"apiVersion": f"{KWOK_GROUP}/{KWOK_VERSION}", "kind": "ClusterPortForward",
            "metadata": {"name": "pincompute-port-forward"},
            "spec": {"forwards": [{"command": command}]}}


def logs_crd() -> dict[str, Any]:
    """The CustomResourceDefinition of kwok's ``Logs`` (one per pod: which file is the log
    of which container), schema-less."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"logs.{KWOK_GROUP}"},
        "spec": {"group": KWOK_GROUP, "scope": "Namespaced",
                 "names": {"kind": "Logs", "listKind": "LogsList", "plural": "logs",
                           "singular": "logs"},
                 "versions": [{"name": KWOK_VERSION, "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {
                                   "type": "object",
                                   "x-kubernetes-preserve-unknown-fields": True}}}]},
    }


def logs_object(fleet_dir: Path, cluster: str, namespace: str, pod: str, uid: str,
                containers: list[str]) -> dict[str, Any]:
    """The kwok ``Logs`` object of a pod: each container's own file, followed; owned by
    the pod, so it goes when the pod goes."""
    return {
        "apiVersion": f"{KWOK_GROUP}/{KWOK_VERSION}", "kind": "Logs",
        "metadata": {"name": pod, "namespace": namespace, "ownerReferences": [
            {"apiVersion": "v1", "kind": "Pod", "name": pod, "uid": uid}]},
        "spec": {"logs": [{"containers": [c], "follow": True,
                           "logsFile": str(log_file(fleet_dir, cluster, namespace, pod, c))}
                          for c in containers]},
    }
