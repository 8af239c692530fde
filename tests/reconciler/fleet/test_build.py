"""Building the fleet's binaries once: the cache key, the pinned versions, the progress a
first build (or a wait for another one) reports."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from reconciler.fleet import build


def test_version_hash_is_stable_and_tracks_go_mod(tmp_path: Path) -> None:
    mod = build.module_dir()
    assert build.version_hash(mod) == build.version_hash(mod)
    copy = tmp_path / "mod"
    copy.mkdir()
    (copy / "go.mod").write_text((mod / "go.mod").read_text().replace("v1.", "v9.", 1))
    (copy / "go.sum").write_text((mod / "go.sum").read_text())
    assert build.version_hash(copy) != build.version_hash(mod)
    assert build.versions(mod)["kubernetes"].startswith("v1.")
    assert "fleet-bin" in str(build.bin_dir(mod))


FAKE_GO = """#!/bin/sh
# a stand-in for `go`: `go list -m` names the training operator's module directory,
# `go list -deps` names 3 packages, `go build -v -o DIR/ ...` prints them slowly and writes
# the binaries
if [ "$1" = list ] && [ "$2" = -m ]; then echo "$FAKE_OPERATOR_DIR"; exit 0; fi
if [ "$1" = list ]; then printf 'runtime\\nexample.com/a\\nexample.com/b\\n'; exit 0; fi
out=""; prev=""
for arg in "$@"; do [ "$prev" = "-o" ] && out="$arg"; prev="$arg"; done
for pkg in runtime example.com/a example.com/b; do echo "$pkg"; sleep 0.4; done
for bin in server kube-apiserver kube-controller-manager kube-scheduler kwok metrics-server \
    training-operator.v1; do
  touch "$out$bin"; done
"""


@pytest.fixture
def fake_toolchain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    go = tmp_path / "go"
    go.write_text(FAKE_GO)
    go.chmod(0o755)
    mod = tmp_path / "mod"
    mod.mkdir()
    (mod / "go.mod").write_text("module fake\n\nrequire k8s.io/kubernetes v1.36.3\n")
    (tmp_path / "metrics-server").mkdir()
    (tmp_path / "metrics-server" / "go.mod").write_text(
        "module fake-metrics\n\nrequire sigs.k8s.io/metrics-server v0.8.0\n")
    (tmp_path / "training-operator").mkdir()
    (tmp_path / "training-operator" / "go.mod").write_text(
        "module fake-training\n\nrequire github.com/kubeflow/training-operator v1.8.1\n")
    crds = tmp_path / "operator-module" / "manifests" / "base" / "crds"
    crds.mkdir(parents=True)
    for name in build.TRAINING_OPERATOR_CRDS:
        (crds / f"{name}.yaml").write_text(f"kind: CustomResourceDefinition\n"
                                           f"metadata: {{name: {name}}}\n")
    monkeypatch.setenv("FAKE_OPERATOR_DIR", str(tmp_path / "operator-module"))
    monkeypatch.setenv("PINCOMPILE_GO", str(go))
    monkeypatch.setenv("PINCOMPILE_FLEET_MODULE", str(mod))
    monkeypatch.setenv("PINCOMPILE_CACHE", str(tmp_path / "cache"))
    return tmp_path


def test_first_build_reports_packages_and_elapsed_time(fake_toolchain: Path) -> None:
    lines: list[str] = []
    path = build.ensure_binaries(echo=lines.append, every=0.3)
    assert build.binaries_present(path) and (path / "etcd").is_file()
    # the training operator's CRDs of the release built, stored as JSON with the binaries
    assert build.load_crd(path, "kubeflow.org_tfjobs") == {
        "kind": "CustomResourceDefinition", "metadata": {"name": "kubeflow.org_tfjobs"}}
    progress = [line for line in lines if line.startswith("building the fleet binaries:")]
    assert progress, lines
    assert any("/3 packages" in line and "elapsed (compiling example.com/" in line
               for line in progress), progress
    assert lines[-1].startswith("built fleet binaries in ")
    again: list[str] = []
    assert build.ensure_binaries(echo=again.append) == path and not again  # cached: silent


def test_waiting_for_another_build_reports_its_progress(fake_toolchain: Path) -> None:
    import fcntl
    import threading

    target = build.bin_dir()
    target.parent.mkdir(parents=True)
    log = target.parent / f"build-{target.name}.log"
    log.write_text(f"go build -v\n{build.TOTAL_PREFIX}10\nruntime\nexample.com/a\n")
    lines: list[str] = []
    with open(target.parent / ".build.lock", "a+") as other:
        fcntl.flock(other, fcntl.LOCK_EX)
        waiter = threading.Thread(target=lambda: lines.append(
            str(build.ensure_binaries(echo=lines.append, every=0.2))))
        waiter.start()
        time.sleep(1.0)
        target.mkdir()
        for name in build.PACKAGES:
            (target / name).write_text("")
        (target / build.CRD_DIR).mkdir()
        for name in build.TRAINING_OPERATOR_CRDS:
            build.crd_path(target, name).write_text("{}")
        (target / build.STAMP).write_text("done")
        fcntl.flock(other, fcntl.LOCK_UN)
    waiter.join(timeout=10)
    assert lines[0].startswith("another process is building the fleet binaries")
    assert any(line.startswith("waiting for another process building the fleet binaries: "
                               "2/10 packages") for line in lines), lines
    assert lines[-2].startswith("fleet binaries built by another process")
    assert lines[-1] == str(target)


def test_training_operator_is_pinned_in_its_own_module_and_in_the_cache_key(
        tmp_path: Path) -> None:
    mod = build.module_dir()
    assert build.versions(mod)["training-operator"] == "v1.8.1"
    assert build.training_operator_module_dir(mod) == mod.parent / "training-operator"
    assert "training-operator" in build.PACKAGES
    copy = tmp_path / "fleet"
    copy.mkdir()
    for name in ("go.mod", "go.sum"):
        (copy / name).write_text((mod / name).read_text())
    (tmp_path / "training-operator").mkdir()
    pinned = (build.training_operator_module_dir(mod) / "go.mod").read_text()
    (tmp_path / "training-operator" / "go.mod").write_text(pinned)
    same = build.version_hash(copy)
    (tmp_path / "training-operator" / "go.mod").write_text(pinned.replace("v1.8.1", "v1.9.0"))
    assert build.version_hash(copy) != same


def test_metrics_server_is_pinned_in_its_own_module_and_in_the_cache_key(
        tmp_path: Path) -> None:
    mod = build.module_dir()
    assert build.versions(mod)["metrics-server"] == "v0.8.0"
    assert build.metrics_server_module_dir(mod) == mod.parent / "metrics-server"
    assert "metrics-server" in build.PACKAGES
    # a version bump of metrics-server alone changes where the binaries are cached
    copy = tmp_path / "fleet"
    copy.mkdir()
    for name in ("go.mod", "go.sum"):
        (copy / name).write_text((mod / name).read_text())
    (tmp_path / "metrics-server").mkdir()
    (tmp_path / "metrics-server" / "go.mod").write_text(
        (build.metrics_server_module_dir(mod) / "go.mod").read_text())
    same = build.version_hash(copy)
    (tmp_path / "metrics-server" / "go.mod").write_text(
        (build.metrics_server_module_dir(mod) / "go.mod").read_text().replace(
            "v0.8.0", "v0.8.1"))
    assert build.version_hash(copy) != same
    assert "gitVersion=v0.8.1" in build.metrics_server_ldflags(copy)
