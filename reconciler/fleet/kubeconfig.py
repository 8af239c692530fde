"""The fleet's kubeconfigs: the one ``up`` writes for users (a context per cluster) and
one per component of each cluster, and API clients made from them."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from reconciler.fleet.certs import Pki
from reconciler.fleet.state import ClusterRuntime, FleetState


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def write_kubeconfig(path: Path, entries: list[tuple[str, str]], pki: Pki, who: str,
                     embed: bool = True, current: str | None = None) -> None:
    """Write a kubeconfig with one context per (context, server), all as user ``who``."""
    def files(kind: str, p: Path) -> dict[str, str]:
        return {f"{kind}-data": _b64(p)} if embed else {kind: str(p)}

    config = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": ctx, "cluster": {"server": server,
                                               **files("certificate-authority", pki.ca_cert)}}
                     for ctx, server in entries],
        "users": [{"name": f"fleet-{who}",
                   "user": {**files("client-certificate", pki.client_cert(who)),
                            **files("client-key", pki.client_key(who))}}],
        "contexts": [{"name": ctx, "context": {"cluster": ctx, "user": f"fleet-{who}"}}
                     for ctx, _ in entries],
        "current-context": current or entries[0][0],
    }
    yaml = YAML()
    yaml.default_flow_style = False
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as out:
        yaml.dump(config, out)
    tmp.chmod(0o600)
    tmp.replace(path)


def api_client(state: FleetState, context: str) -> Any:
    """A kubernetes ApiClient for one context of the fleet (close it when done)."""
    from kubernetes import config as kconfig

    return kconfig.new_client_from_config(config_file=str(state.kubeconfig), context=context)


def cluster_dir(state: FleetState, runtime: ClusterRuntime) -> Path:
    """The cluster's directory in the fleet's (its components' kubeconfigs and files)."""
    return state.dir / "clusters" / runtime.name


def kubeconfig_of(state: FleetState, runtime: ClusterRuntime, who: str) -> Path:
    """The kubeconfig of one component (``who``: its client certificate) of a cluster."""
    return cluster_dir(state, runtime) / f"{who}.kubeconfig"


