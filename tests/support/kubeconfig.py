"""A kubeconfig of one context, for tests that point the client at a server of their own."""

from __future__ import annotations

from pathlib import Path

import yaml


def kubeconfig_to(tmp_path: Path, server: str) -> Path:
    """A kubeconfig whose ``host`` context points at ``server`` with a bearer token."""
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "host",
        "clusters": [{"name": "host", "cluster": {"server": server}}],
        "users": [{"name": "me", "user": {"token": "kube-secret-token"}}],
        "contexts": [{"name": "host", "context": {"cluster": "host", "user": "me"}}]}))
    return path
