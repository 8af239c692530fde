"""``promtool`` for the rule tests: built once from ``hack/promtool/go.mod`` (the Prometheus
project's own ``cmd/promtool`` from the Go module proxy) into the cache folder, under a
lock, like the fleet's binaries; reused while that go.mod and go.sum are unchanged."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from pincompile.cachedir import cache_root

MODULE = Path(__file__).resolve().parents[2] / "hack" / "promtool"
PACKAGE = "github.com/prometheus/prometheus/cmd/promtool"
BUILD_TIMEOUT = 3600


def binary_path() -> Path:
    digest = hashlib.sha256()
    for name in ("go.mod", "go.sum"):
        digest.update((MODULE / name).read_bytes())
    return cache_root() / "promtool-bin" / digest.hexdigest()[:16] / "promtool"


def ensure_promtool() -> Path | None:
    """The cached promtool, built first when missing; None without Go."""
    target = binary_path()
    if target.exists():
        return target
    go = shutil.which("go")
    if go is None:
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    with (target.parent / "build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.exists():
            partial = target.with_suffix(".partial")
            env = {**os.environ, "GOFLAGS": "-mod=mod"}
            with (target.parent / "build.log").open("w") as log:
                subprocess.run([go, "build", "-o", str(partial), PACKAGE],
                               cwd=MODULE, env=env, stdout=log, stderr=subprocess.STDOUT,
                               check=True, timeout=BUILD_TIMEOUT)
            partial.rename(target)
    return target
