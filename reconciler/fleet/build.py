"""Build (once) and cache the fleet's binaries from ``hack/fleet/go.mod``.

Every version is pinned in that go.mod. The binaries land in
``${PINCOMPILE_CACHE:-~/.cache/pincompile}/fleet-bin/<hash>/`` where the hash covers
go.mod, go.sum, the build flags and the platform, so a version bump builds anew and an
unchanged module reuses what is there.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import platform
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from reconciler.fleet.errors import FleetError
from reconciler.fleet.progress import TOTAL_PREFIX, format_elapsed, read_build_log

#: binary name -> Go package it is built from
PACKAGES: dict[str, str] = {
    "etcd": "go.etcd.io/etcd/server/v3",
    "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
    "kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
    "kube-scheduler": "k8s.io/kubernetes/cmd/kube-scheduler",
    "kwok": "sigs.k8s.io/kwok/cmd/kwok",
}
#: what `go build -o DIR/` names a package's binary, when it differs from ours
_GO_NAMES = {"etcd": "server"}
STAMP = ".complete"
ENABLE_HINT = "install Go >= 1.26 (https://go.dev/dl/) or set PINCOMPILE_GO to its `go` binary"


def cache_root() -> Path:
    """``$PINCOMPILE_CACHE`` or ``~/.cache/pincompile``."""
    return Path(os.environ.get("PINCOMPILE_CACHE") or "~/.cache/pincompile").expanduser()


def module_dir() -> Path:
    """The Go helper module (``hack/fleet``), or ``$PINCOMPILE_FLEET_MODULE``."""
    env = os.environ.get("PINCOMPILE_FLEET_MODULE")
    path = Path(env) if env else Path(__file__).resolve().parents[2] / "hack" / "fleet"
    if not (path / "go.mod").is_file():
        raise FleetError(f"fleet Go module not found at {path} "
                         "(run from a source checkout or set PINCOMPILE_FLEET_MODULE)")
    return path


def versions(mod: Path | None = None) -> dict[str, str]:
    """Pinned versions from go.mod: kubernetes, kwok, etcd."""
    text = ((mod or module_dir()) / "go.mod").read_text()
    found = {}
    for key, module in (("kubernetes", "k8s.io/kubernetes"), ("kwok", "sigs.k8s.io/kwok"),
                        ("etcd", "go.etcd.io/etcd/server/v3")):
        match = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", text, re.M)
        if match:
            found[key] = match.group(1)
    return found


def ldflags(mod: Path | None = None) -> str:
    """-ldflags: strip symbols and stamp the Kubernetes version (as release builds do)."""
    flags = ["-s", "-w"]
    version = versions(mod).get("kubernetes", "")
    match = re.match(r"v(\d+)\.(\d+)\.", version)
    if match:
        for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
            flags += [f"-X {pkg}.gitVersion={version}", f"-X {pkg}.gitMajor={match.group(1)}",
                      f"-X {pkg}.gitMinor={match.group(2)}", f"-X {pkg}.gitTreeState=clean"]
    return " ".join(flags)


def build_args(mod: Path | None = None) -> list[str]:
    """Arguments after ``go``."""
    return ["build", "-trimpath", f"-ldflags={ldflags(mod)}"]


def version_hash(mod: Path | None = None) -> str:
    """Cache key for the binaries: go.mod, go.sum, build flags, platform."""
    mod = mod or module_dir()
    digest = hashlib.sha256()
    for name in ("go.mod", "go.sum"):
        path = mod / name
        digest.update(path.read_bytes() if path.exists() else b"")
    digest.update(" ".join(build_args(mod)).encode())
    digest.update(f"{platform.system()}/{platform.machine()}/cgo0".encode())
    return digest.hexdigest()[:16]


def bin_dir(mod: Path | None = None) -> Path:
    """Where the binaries of the pinned versions live (built or not)."""
    return cache_root() / "fleet-bin" / version_hash(mod)


def binaries_present(directory: Path) -> bool:
    """True when a complete build is in ``directory``."""
    return (directory / STAMP).exists() and all((directory / n).is_file() for n in PACKAGES)


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


def count_packages(go: str, mod: Path, env: dict[str, str]) -> int:
    """How many packages (standard library included) the build compiles at most; 0 if
    ``go list`` fails."""
    try:
        out = subprocess.run([go, "list", "-deps", *PACKAGES.values()], cwd=mod, env=env,
                             capture_output=True, text=True, timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return len(out.stdout.split()) if out.returncode == 0 else 0


def go_build(go: str, mod: Path, out: Path, log: Path,
             extra_env: dict[str, str] | None = None, progress: Progress | None = None,
             every: float = 30.0) -> None:
    """Build every binary of :data:`PACKAGES` into ``out`` (replaced), output to ``log``.

    Calls ``progress`` with a line saying what is compiled and the elapsed time every
    ``every`` seconds while the build runs.
    """
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    env = {**os.environ, "GOFLAGS": "-mod=mod", "CGO_ENABLED": "0", **(extra_env or {})}
    # -v lists each package as it is compiled (progress); it is not part of version_hash
    argv = [go, *build_args(mod), "-v", "-o", f"{out}/", *PACKAGES.values()]
    start = time.monotonic()
    with open(log, "w") as handle:
        handle.write(" ".join(argv) + "\n")
        handle.flush()
        total = count_packages(go, mod, env) if progress else 0
        if total:
            handle.write(f"{TOTAL_PREFIX}{total}\n")
            handle.flush()
        proc = subprocess.Popen(argv, cwd=mod, env=env, stdout=handle,
                                stderr=subprocess.STDOUT)
        next_report = start + every
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
    if proc.returncode != 0:
        shutil.rmtree(out, ignore_errors=True)
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-25:])
        raise FleetError(f"building the fleet binaries failed (see {log})", tail)
    for ours, gos in _GO_NAMES.items():
        (out / gos).rename(out / ours)


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
