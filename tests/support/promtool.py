"""Prometheus's rule checkers for the rule tests, each built once from a Go module of this
repository (the Go module proxy pins the Prometheus project's sources) into the cache
folder, under a lock, like the fleet's binaries; reused while that module is unchanged.

* ``promrules`` (``hack/promrules``): the Prometheus project's rule parser
  (``model/rulefmt``), the one ``promtool check rules`` calls, and promtool's duplicate
  check — what the tests always run (a few minutes to build on a fresh machine);
* ``promtool`` (``hack/promtool``): Prometheus's own ``cmd/promtool``, whose
  service-discovery plugins pull in every cloud SDK (40 minutes on the loaded 2-core
  machine, docs/slo.md): built only when ``PINCOMPILE_PROMTOOL=build`` (``make promtool``), then
  run by the tests whenever it is in the cache.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from pincompile.cachedir import cache_root

HACK = Path(__file__).resolve().parents[2] / "hack"
CHECKERS = {"promrules": (HACK / "promrules", "."),
            "promtool": (HACK / "promtool", "github.com/prometheus/prometheus/cmd/promtool")}
BUILD_TIMEOUT = 4 * 3600


def binary_path(name: str) -> Path:
    module, _ = CHECKERS[name]
    digest = hashlib.sha256()
    for source in sorted(module.iterdir()):
        if source.suffix in (".mod", ".sum", ".go"):
            digest.update(source.name.encode() + source.read_bytes())
    return cache_root() / f"{name}-bin" / digest.hexdigest()[:16] / name


def checker(name: str, *, build: bool = True) -> Path | None:
    """The cached binary, built first when missing and ``build``; None without Go."""
    target = binary_path(name)
    if target.exists() or not build:
        return target if target.exists() else None
    go = shutil.which("go")
    if go is None:
        return None
    module, package = CHECKERS[name]
    target.parent.mkdir(parents=True, exist_ok=True)
    with (target.parent / "build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.exists():
            partial = target.with_suffix(".partial")
            with (target.parent / "build.log").open("w") as log:
                subprocess.run([go, "build", "-o", str(partial), package], cwd=module,
                               env={**os.environ, "GOFLAGS": "-mod=mod"}, stdout=log,
                               stderr=subprocess.STDOUT, check=True, timeout=BUILD_TIMEOUT)
            partial.rename(target)
    return target


def checkers() -> dict[str, Path]:
    """Every checker this run can use: promrules (built when missing), and promtool when
    cached or when ``PINCOMPILE_PROMTOOL=build`` asks to build it."""
    found = {"promrules": checker("promrules")}
    found["promtool"] = checker("promtool",
                                build=os.environ.get("PINCOMPILE_PROMTOOL") == "build")
    return {name: path for name, path in found.items() if path is not None}
