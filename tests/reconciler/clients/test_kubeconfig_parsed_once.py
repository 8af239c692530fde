"""A kubeconfig is read and parsed once per process while it is unchanged (a pass
connects to every cluster of a fleet), and read again once it changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.config import kube_config

from reconciler.clients import connect


def write_kubeconfig(path: Path, contexts: list[str]) -> None:
    """One cluster per context (port 6443 + index), the CA named relative to the file."""
    (path.parent / "ca.crt").write_text("not checked until a connection is made\n")
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": contexts[0],
        "clusters": [{"name": c, "cluster": {"server": f"https://127.0.0.1:{6443 + i}",
                                             "certificate-authority": "ca.crt"}}
                     for i, c in enumerate(contexts)],
        "users": [{"name": "someone", "user": {"token": "t"}}],
        "contexts": [{"name": c, "context": {"cluster": c, "user": "someone"}}
                     for c in contexts]}))


def test_each_context_from_one_parse_and_a_changed_file_is_read_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parses: list[str] = []
    real = kube_config.KubeConfigMerger

    def counted(paths: Any) -> Any:
        parses.append(paths)
        return real(paths)

    monkeypatch.setattr(kube_config, "KubeConfigMerger", counted)
    path = tmp_path / "kubeconfig"
    write_kubeconfig(path, ["host", "rt-a"])
    assert connect.contexts(str(path)) == ["host", "rt-a"]
    host = connect.load_configuration(str(path), "host")
    member = connect.load_configuration(str(path), "rt-a")
    assert (host.host, member.host) == ("https://127.0.0.1:6443", "https://127.0.0.1:6444")
    assert member.ssl_ca_cert == str(tmp_path / "ca.crt")  # relative to the kubeconfig
    assert len(parses) == 1

    write_kubeconfig(path, ["host", "rt-a", "rt-b"])
    assert connect.load_configuration(str(path), "rt-b").host == "https://127.0.0.1:6445"
    assert len(parses) == 2
    with pytest.raises(connect.KubeconfigError, match="context 'rt-c' is not in"):
        connect.load_configuration(str(path), "rt-c")
