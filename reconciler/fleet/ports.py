"""Free loopback ports that two fleets never share.

Ports are drawn at random from below the kernel's ephemeral range (so outgoing
connections never sit on them), must be bindable on 127.0.0.1 right now, and must not be
claimed by another fleet. Claims live in one registry file next to the fleet directories
(guarded by ``flock``), so two fleets starting at the same time cannot pick the same port
in the gap between choosing it and binding it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import random
import socket
from collections.abc import Iterable, Iterator
from pathlib import Path

PORT_RANGE = (20000, 32000)


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """True when ``host:port`` can be bound right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


def choose_ports(
    count: int,
    exclude: Iterable[int] = (),
    port_range: tuple[int, int] = PORT_RANGE,
    rng: random.Random | None = None,
) -> list[int]:
    """``count`` distinct free ports in ``port_range`` (inclusive) that are not excluded."""
    rng = rng or random.SystemRandom()
    low, high = port_range
    eph_low, eph_high = _ephemeral_range()
    banned = set(exclude)
    candidates = [p for p in range(low, high + 1)
                  if p not in banned and not eph_low <= p <= eph_high]
    rng.shuffle(candidates)
    chosen: list[int] = []
    for port in candidates:
        if port_is_free(port):
            chosen.append(port)
            if len(chosen) == count:
                return chosen
    raise OSError(f"only {len(chosen)} of {count} free ports in {low}-{high}")


@contextlib.contextmanager
def _locked_registry(registry: Path) -> Iterator[dict[str, list[int]]]:
    registry.parent.mkdir(parents=True, exist_ok=True)
    with open(registry.with_suffix(".lock"), "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            data = json.loads(registry.read_text()) if registry.exists() else {}
        except (OSError, ValueError):
            data = {}
        claims = {str(k): [int(p) for p in v] for k, v in data.items() if isinstance(v, list)}
        yield claims
        tmp = registry.with_suffix(".tmp")
        tmp.write_text(json.dumps(claims, indent=1, sort_keys=True))
        tmp.replace(registry)


def claim_ports(registry: Path, owner: str, count: int) -> list[int]:
    """Choose ``count`` ports for fleet ``owner`` and record the claim in ``registry``.

    Claims of fleets whose directory no longer holds a state file are dropped first.
    """
    with _locked_registry(registry) as claims:
        for other in list(claims):
            if other != owner and not (Path(other) / "state.json").exists():
                del claims[other]
        taken = {p for other, ports in claims.items() if other != owner for p in ports}
        ports = choose_ports(count, exclude=taken)
        claims[owner] = ports
        return ports


def release_ports(registry: Path, owner: str) -> None:
    """Forget the ports claimed by ``owner``."""
    with _locked_registry(registry) as claims:
        claims.pop(owner, None)
