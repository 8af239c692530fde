"""The one folder pincompile keeps what it can make again in: the compile cache
(``compile-v1/``), the local fleet's binaries (``fleet-bin/``) and state (``fleet/``), and
``serve``'s default insight store (``insight.db``). Nothing in it is needed: deleting it
costs a slower next run."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """``$PINCOMPILE_CACHE``; else ``$XDG_CACHE_HOME/pincompile``; else
    ``~/.cache/pincompile``."""
    if os.environ.get("PINCOMPILE_CACHE"):
        return Path(os.environ["PINCOMPILE_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(base).expanduser() / "pincompile"


def local_fleet_dir() -> Path:
    """Where ``pincompile fleet up`` keeps the local fleet by default."""
    return cache_root() / "fleet"


def local_fleet_kubeconfig() -> Path:
    """The kubeconfig ``pincompile fleet up`` writes for its users (a context per cluster,
    ``host`` among them) and ``fleet down`` removes: commands given no kubeconfig look for
    it here."""
    return local_fleet_dir() / "kubeconfig"
