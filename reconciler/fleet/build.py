"""Build (once) and cache the fleet's binaries from ``hack/fleet/go.mod``,
``hack/metrics-server/go.mod`` and ``hack/training-operator/go.mod``.

Every version is pinned in those go.mod files (metrics-server and the Kubeflow training
operator have modules of their own: each is built against the k8s.io libraries it was
released with, not the fleet's Kubernetes pins). The binaries land in
``${PINCOMPILE_CACHE:-~/.cache/pincompile}/fleet-bin/<hash>/`` where the hash covers every
module's go.mod and go.sum, the build flags and the platform, so a version bump builds
anew and unchanged modules reuse what is there. The training operator's CRDs (the ones
of the release that is built, from its module) are stored next to the binaries, as JSON
(:data:`CRD_DIR`).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

from pincompile.contract import cache_root
from reconciler.fleet.errors import FleetError
from reconciler.fleet.progress import TOTAL_PREFIX, format_elapsed, read_build_log

#: binary name -> Go package it is built from, for the fleet module (hack/fleet)
FLEET_PACKAGES: dict[str, str] = {
    "etcd": "go.etcd.io/etcd/server/v3",
    "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
    "kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
    "kube-scheduler": "k8s.io/kubernetes/cmd/kube-scheduler",
    "kwok": "sigs.k8s.io/kwok/cmd/kwok",
}
#: the same for the metrics-server module (hack/metrics-server, next to hack/fleet)
METRICS_SERVER_MODULE = "metrics-server"
METRICS_SERVER_PACKAGES: dict[str, str] = {
    "metrics-server": "sigs.k8s.io/metrics-server/cmd/metrics-server",
}
#: the same for the Kubeflow training operator (hack/training-operator)
TRAINING_OPERATOR_MODULE = "training-operator"
TRAINING_OPERATOR_GO_MODULE = "github.com/kubeflow/training-operator"
TRAINING_OPERATOR_PACKAGES: dict[str, str] = {
    "training-operator": f"{TRAINING_OPERATOR_GO_MODULE}/cmd/training-operator.v1",
}
#: the CRDs of the kinds the fleet's training operator serves, as the release ships them
#: (``manifests/base/crds/`` of its module) -> stored in ``<bin dir>/CRD_DIR/<name>.json``
TRAINING_OPERATOR_CRDS = ("kubeflow.org_tfjobs", "kubeflow.org_pytorchjobs")
CRD_DIR = "crds"
#: every binary of the fleet -> Go package
PACKAGES: dict[str, str] = {**FLEET_PACKAGES, **METRICS_SERVER_PACKAGES,
                            **TRAINING_OPERATOR_PACKAGES}
#: what `go build -o DIR/` names a package's binary, when it differs from ours
_GO_NAMES = {"etcd": "server", "training-operator": "training-operator.v1"}
STAMP = ".complete"
ENABLE_HINT = "install Go >= 1.26 (https://go.dev/dl/) or set PINCOMPILE_GO to its `go` binary"


def module_dir() -> Path:
    """The Go helper module (``hack/fleet``), or ``$PINCOMPILE_FLEET_MODULE``."""
    env = os.environ.get("PINCOMPILE_FLEET_MODULE")
    path = Path(env) if env else Path(__file__).resolve().parents[2] / "hack" / "fleet"
    if not (path / "go.mod").is_file():
        raise FleetError(f"fleet Go module not found at {path} "
                         "(run from a source checkout or set PINCOMPILE_FLEET_MODULE)")
    return path


def metrics_server_module_dir(mod: Path | None = None) -> Path:
    """The metrics-server Go module: ``hack/metrics-server``, next to the fleet module."""
    return (mod or module_dir()).parent / METRICS_SERVER_MODULE


def training_operator_module_dir(mod: Path | None = None) -> Path:
    """The training operator's Go module: ``hack/training-operator``."""
    return (mod or module_dir()).parent / TRAINING_OPERATOR_MODULE


def _pinned(path: Path, keys: tuple[tuple[str, str], ...]) -> dict[str, str]:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    found = {}
    for key, module in keys:
        match = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", text, re.M)
        if match:
            found[key] = match.group(1)
    return found


def versions(mod: Path | None = None) -> dict[str, str]:
    """Pinned versions from the go.mod files: kubernetes, kwok, etcd, metrics-server,
    training-operator."""
    mod = mod or module_dir()
    return {**_pinned(mod / "go.mod", (("kubernetes", "k8s.io/kubernetes"),
                                       ("kwok", "sigs.k8s.io/kwok"),
                                       ("etcd", "go.etcd.io/etcd/server/v3"))),
            **_pinned(metrics_server_module_dir(mod) / "go.mod",
                      (("metrics-server", "sigs.k8s.io/metrics-server"),)),
            **_pinned(training_operator_module_dir(mod) / "go.mod",
                      (("training-operator", TRAINING_OPERATOR_GO_MODULE),))}


def ldflags(mod: Path | None = None) -> str:
    """-ldflags of the fleet module: strip symbols and stamp the Kubernetes version (as
    release builds do)."""
    flags = ["-s", "-w"]
    version = versions(mod).get("kubernetes", "")
    match = re.match(r"v(\d+)\.(\d+)\.", version)
    if match:
        for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
            flags += [f"-X {pkg}.gitVersion={version}", f"-X {pkg}.gitMajor={match.group(1)}",
                      f"-X {pkg}.gitMinor={match.group(2)}", f"-X {pkg}.gitTreeState=clean"]
    return " ".join(flags)


def metrics_server_ldflags(mod: Path | None = None) -> str:
    """-ldflags of metrics-server: strip symbols, stamp its version as its Makefile does."""
    version = versions(mod).get("metrics-server", "")
    stamp = [f"-X k8s.io/client-go/pkg/version.gitVersion={version}"] if version else []
    return " ".join(["-s", "-w", *stamp])


def build_args(mod: Path | None = None) -> list[str]:
    """Arguments after ``go`` (fleet module)."""
    return ["build", "-trimpath", f"-ldflags={ldflags(mod)}"]


def builds(mod: Path | None = None) -> list[tuple[Path, list[str], dict[str, str]]]:
    """Each module to build: (directory, arguments after ``go``, binary -> package)."""
    mod = mod or module_dir()
    return [(mod, build_args(mod), FLEET_PACKAGES),
            (metrics_server_module_dir(mod),
             ["build", "-trimpath", f"-ldflags={metrics_server_ldflags(mod)}"],
             METRICS_SERVER_PACKAGES),
            (training_operator_module_dir(mod), ["build", "-trimpath", "-ldflags=-s -w"],
             TRAINING_OPERATOR_PACKAGES)]


def version_hash(mod: Path | None = None) -> str:
    """Cache key for the binaries: every module's go.mod and go.sum, build flags,
    platform, and which CRDs are stored."""
    digest = hashlib.sha256()
    for directory, args, _ in builds(mod):
        for name in ("go.mod", "go.sum"):
            path = directory / name
            digest.update(path.read_bytes() if path.exists() else b"")
        digest.update(" ".join(args).encode())
    digest.update(f"{platform.system()}/{platform.machine()}/cgo0".encode())
    digest.update(" ".join(TRAINING_OPERATOR_CRDS).encode())
    return digest.hexdigest()[:16]


def bin_dir(mod: Path | None = None) -> Path:
    """Where the binaries of the pinned versions live (built or not)."""
    return cache_root() / "fleet-bin" / version_hash(mod)


def binaries_present(directory: Path) -> bool:
    """True when a complete build is in ``directory``."""
    return ((directory / STAMP).exists() and all((directory / n).is_file() for n in PACKAGES)
            and all(crd_path(directory, n).is_file() for n in TRAINING_OPERATOR_CRDS))


def crd_path(directory: Path, name: str) -> Path:
    """Where a stored CRD of the build in ``directory`` is."""
    return directory / CRD_DIR / f"{name}.json"


def load_crd(directory: Path, name: str) -> dict[str, Any]:
    """A CRD stored with the binaries in ``directory`` (one of
    :data:`TRAINING_OPERATOR_CRDS`)."""
    data = json.loads(crd_path(directory, name).read_text())
    if not isinstance(data, dict):
        raise FleetError(f"{crd_path(directory, name)} is not a CRD")
    return data


def store_crds(go: str, mod: Path, out: Path, env: dict[str, str]) -> None:
    """Copy the training operator's CRDs from its module (in Go's module cache) into
    ``out/CRD_DIR`` as JSON (loading 540 KB of YAML each fleet up is slow)."""
    operator = training_operator_module_dir(mod)
    listed = subprocess.run([go, "list", "-m", "-f", "{{.Dir}}", TRAINING_OPERATOR_GO_MODULE],
                            cwd=operator, env=env, capture_output=True, text=True,
                            timeout=300, check=False)
    source = Path(listed.stdout.strip()) / "manifests" / "base" / "crds"
    if listed.returncode != 0 or not source.is_dir():
        raise FleetError(f"the training operator's CRDs were not found in {source}",
                         listed.stderr[-2000:])
    (out / CRD_DIR).mkdir()
    for name in TRAINING_OPERATOR_CRDS:
        crd = yaml.safe_load((source / f"{name}.yaml").read_text())
        crd_path(out, name).write_text(json.dumps(crd))


def find_go() -> str | None:
    """The ``go`` binary: ``$PINCOMPILE_GO`` (only that, when set), else PATH, else
    /usr/local/go/bin/go."""
    explicit = os.environ.get("PINCOMPILE_GO")
    candidates = [explicit] if explicit else [shutil.which("go"), "/usr/local/go/bin/go"]
    for candidate in candidates:
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


Progress = Callable[[str], None]


@contextlib.contextmanager
def _build_lock(path: Path, log: Path, echo: Callable[[str], None], progress: Progress,
                every: float) -> Iterator[None]:
    """Hold the build lock; while another process builds, report that build's progress."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            echo(f"another process is building the fleet binaries (log: {log}); waiting")
            start = time.monotonic()
            next_report = start + every
            while True:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    time.sleep(min(1.0, every))
                if time.monotonic() >= next_report:
                    progress(read_build_log(log, time.monotonic() - start, waiting=True).line())
                    next_report += every
        yield


def listed_packages(go: str, mod: Path, env: dict[str, str],
                    packages: dict[str, str]) -> set[str]:
    """Packages (``import/path@version``, standard library included) that building
    ``packages`` in ``mod`` compiles at most; empty if ``go list`` fails."""
    fmt = "{{.ImportPath}}@{{with .Module}}{{.Version}}{{end}}"
    try:
        out = subprocess.run([go, "list", "-deps", "-f", fmt, *packages.values()], cwd=mod,
                             env=env,
                             capture_output=True, text=True, timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return set()
    return set(out.stdout.split()) if out.returncode == 0 else set()


def count_packages(go: str, mod: Path, env: dict[str, str]) -> int:
    """How many packages the build of every module compiles at most (a package two
    modules use at the same version counts once); 0 if ``go list`` fails for one."""
    found: set[str] = set()
    for directory, _args, packages in builds(mod):
        listed = listed_packages(go, directory, env, packages)
        if not listed:
            return 0
        found |= listed
    return len(found)


def _run_logged(argv: list[str], cwd: Path, env: dict[str, str], log: Path,
                progress: Progress | None, every: float, start: float) -> int:
    """Run ``argv`` appending its output to ``log``; report progress every ``every`` s."""
    with open(log, "a") as handle:
        handle.write(" ".join(argv) + "\n")
        handle.flush()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=handle,
                                stderr=subprocess.STDOUT)
        next_report = time.monotonic() + every
        try:
            while proc.poll() is None:
                time.sleep(min(1.0, every))
                if progress and time.monotonic() >= next_report:
                    progress(read_build_log(log, time.monotonic() - start).line())
                    next_report += every
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return proc.returncode


def go_build(go: str, mod: Path, out: Path, log: Path,
             extra_env: dict[str, str] | None = None, progress: Progress | None = None,
             every: float = 30.0) -> None:
    """Build every binary of :data:`PACKAGES` (each module in turn, ``mod`` being the
    fleet module) into ``out`` (replaced), output to ``log``; store the training
    operator's CRDs there too.

    Calls ``progress`` with a line saying what is compiled and the elapsed time every
    ``every`` seconds while the build runs.
    """
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    env = {**os.environ, "GOFLAGS": "-mod=mod", "CGO_ENABLED": "0", **(extra_env or {})}
    start = time.monotonic()
    log.write_text("")
    for directory, _args, _packages in builds(mod):
        if not (directory / "go.mod").is_file():
            raise FleetError(f"fleet Go module not found at {directory} "
                             "(it belongs next to the fleet module)")
    total = count_packages(go, mod, env) if progress else 0
    if total:
        log.write_text(f"{TOTAL_PREFIX}{total}\n")
    for directory, args, packages in builds(mod):
        # -v lists each package as it is compiled (progress); it is not part of version_hash
        argv = [go, *args, "-v", "-o", f"{out}/", *packages.values()]
        if _run_logged(argv, directory, env, log, progress, every, start) != 0:
            shutil.rmtree(out, ignore_errors=True)
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-25:])
            raise FleetError(f"building the fleet binaries failed (see {log})", tail)
    for ours, gos in _GO_NAMES.items():
        (out / gos).rename(out / ours)
    store_crds(go, mod, out, env)


def ensure_binaries(echo: Callable[[str], None] = print, force: bool = False,
                    progress: Progress | None = None, every: float = 30.0) -> Path:
    """Return the directory with all fleet binaries, building them first if needed.

    While building (or waiting for another process's build) it reports what is compiled
    and the elapsed time through ``progress`` (default: ``echo``) every ``every`` seconds.
    """
    mod = module_dir()
    target = bin_dir(mod)
    if binaries_present(target) and not force:
        return target
    go = find_go()
    if go is None:
        raise FleetError(f"Go toolchain not found: {ENABLE_HINT}")
    report = progress or echo
    log = target.parent / f"build-{target.name}.log"
    with _build_lock(target.parent / ".build.lock", log, echo, report, every):
        if binaries_present(target) and not force:  # built by someone else meanwhile
            echo(f"fleet binaries built by another process: {target}")
            return target
        staging = target.parent / f".{target.name}.{os.getpid()}.tmp"
        vers = ", ".join(f"{k} {v}" for k, v in versions(mod).items())
        echo(f"building fleet binaries ({vers}) into {target}")
        echo(f"  (the first build compiles Kubernetes: ~10-20 min on 2 cores; log: {log})")
        start = time.monotonic()
        go_build(go, mod, staging, log, progress=report, every=every)
        (staging / STAMP).write_text(f"{vers}\nbuilt in {time.monotonic() - start:.0f}s\n")
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
        echo(f"built fleet binaries in {format_elapsed(time.monotonic() - start)}")
    return target
