"""What a local fleet is: its clusters' runtime data (ports, nodes, which components each
runs) and the recorded state of the whole fleet (``state.json``)."""

from __future__ import annotations

import contextlib
import fcntl
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pincompile.contract import local_fleet_dir
from reconciler.fleet import build, profiles
from reconciler.fleet.errors import FleetError
from reconciler.fleet.processes import Proc, is_alive

HOST = "host"
STATE_FILE = "state.json"
LOCK_FILE = ".lock"
#: components of a member cluster that ``stop_component`` / ``start_component`` manage
COMPONENTS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok",
              "metrics-server", "training-operator")


def default_dir() -> Path:
    """Where ``fleet up`` keeps the local fleet unless told (see ``pincompile.cachedir``)."""
    return local_fleet_dir()


def port_registry() -> Path:
    """The file in which fleets claim their ports."""
    return build.cache_root() / "fleet-ports.json"


@contextlib.contextmanager
def dir_lock(directory: Path) -> Iterator[None]:
    """Hold the fleet directory's lock (one `pincompile fleet` command at a time)."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / LOCK_FILE, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise FleetError(f"another `pincompile fleet` command is working on {directory}"
                             ) from exc
        yield


@dataclass
class ClusterRuntime:
    """One running control plane of the fleet."""

    name: str
    context: str
    port: int
    controller_manager_port: int
    scheduler_port: int
    etcd_prefix: str
    nodes: list[str] = field(default_factory=list)
    kwok_port: int = 0
    #: 0 for the host, which runs no metrics-server
    metrics_server_port: int = 0
    #: the training operator's /readyz and webhook ports; 0 where it does not run
    training_operator_port: int = 0
    training_webhook_port: int = 0
    #: the kubelet port the nodes report: the fleet's front for kwok (kubelet_front.py)
    kubelet_port: int = 0

    @property
    def components(self) -> tuple[str, ...]:
        """The components (of :data:`COMPONENTS`) this cluster runs."""
        absent = {"metrics-server": not self.metrics_server_port,
                  "training-operator": not self.training_operator_port}
        return tuple(c for c in COMPONENTS if not absent.get(c, False))

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.port}"


@dataclass
class FleetState:
    """Everything ``up`` recorded about a fleet (persisted as ``state.json``)."""

    dir: Path
    phase: str = "starting"
    owner_pid: int = 0
    bin_dir: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    clusters_path: str = ""
    etcd_port: int = 0
    etcd_peer_port: int = 0
    clusters: list[ClusterRuntime] = field(default_factory=list)
    procs: list[Proc] = field(default_factory=list)
    started_at: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)
    #: the timer profile it was started with (:mod:`.profiles`)
    profile: str = profiles.DEFAULT
    #: where its pods' scratch directories are (exec runs there; outside ``dir``)
    exec_dir: str = ""

    @property
    def timers(self) -> profiles.Profile:
        """The fleet's timer profile."""
        return profiles.PROFILES.get(self.profile, profiles.PROFILES[profiles.DEFAULT])

    @property
    def kubeconfig(self) -> Path:
        return self.dir / "kubeconfig"

    @property
    def contexts(self) -> dict[str, str]:
        """Cluster name -> kubeconfig context (includes ``host``)."""
        return {c.name: c.context for c in self.clusters}

    def cluster(self, name: str) -> ClusterRuntime:
        for runtime in self.clusters:
            if name in (runtime.name, runtime.context):
                return runtime
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        return {
            "dir": str(self.dir), "phase": self.phase, "owner_pid": self.owner_pid,
            "bin_dir": self.bin_dir, "versions": self.versions,
            "clusters_path": self.clusters_path, "kubeconfig": str(self.kubeconfig),
            "etcd_port": self.etcd_port, "etcd_peer_port": self.etcd_peer_port,
            "clusters": [{**vars(c), "server": c.server} for c in self.clusters],
            "procs": [p.to_json() for p in self.procs],
            "started_at": self.started_at, "timings": self.timings, "profile": self.profile,
            "exec_dir": self.exec_dir,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FleetState:
        clusters = [ClusterRuntime(**{k: v for k, v in c.items() if k != "server"})
                    for c in data.get("clusters", [])]
        return cls(
            dir=Path(data["dir"]), phase=data.get("phase", "starting"),
            owner_pid=int(data.get("owner_pid", 0)), bin_dir=data.get("bin_dir", ""),
            versions=dict(data.get("versions", {})),
            clusters_path=data.get("clusters_path", ""),
            etcd_port=int(data.get("etcd_port", 0)),
            etcd_peer_port=int(data.get("etcd_peer_port", 0)), clusters=clusters,
            procs=[Proc.from_json(p) for p in data.get("procs", [])],
            started_at=float(data.get("started_at", 0.0)),
            timings=dict(data.get("timings", {})),
            profile=str(data.get("profile", profiles.DEFAULT)),
            exec_dir=str(data.get("exec_dir", "")),
        )

    def save(self) -> None:
        tmp = self.dir / f"{STATE_FILE}.tmp"
        tmp.write_text(json.dumps(self.to_json(), indent=2))
        tmp.replace(self.dir / STATE_FILE)


def read_state(directory: Path) -> FleetState | None:
    """The recorded state of the fleet in ``directory``, if any."""
    path = directory / STATE_FILE
    try:
        return FleetState.from_json(json.loads(path.read_text()))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise FleetError(f"{path} is unreadable ({exc}); remove {directory} by hand") from exc


def is_running(state: FleetState) -> bool:
    """True when the fleet finished starting and all its processes still run."""
    return state.phase == "up" and bool(state.procs) and all(is_alive(p) for p in state.procs)
