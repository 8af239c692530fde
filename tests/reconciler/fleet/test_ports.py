"""Ports of a fleet: free, outside the ephemeral range, never shared between fleets."""

from __future__ import annotations

import json
import random
import socket
from pathlib import Path

from reconciler.fleet import ports


def test_choose_ports_are_distinct_free_and_not_excluded() -> None:
    excluded = set(range(20000, 26000))
    chosen = ports.choose_ports(20, exclude=excluded, rng=random.Random(1))
    assert len(set(chosen)) == 20
    low, high = ports.PORT_RANGE
    eph = ports._ephemeral_range()
    for port in chosen:
        assert low <= port <= high and port not in excluded
        assert not eph[0] <= port <= eph[1]
        assert ports.port_is_free(port)


def test_choose_ports_skips_ports_in_use() -> None:
    # four free ports in a row (the fleets of a run beside this test hold others)
    busy = next(p for p in range(21000, 21900)
                if all(ports.port_is_free(p + i) for i in range(4)))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", busy))
        sock.listen()
        assert not ports.port_is_free(busy)
        chosen = ports.choose_ports(3, port_range=(busy, busy + 3))
        assert busy not in chosen


def test_claimed_ports_never_shared_between_fleets(tmp_path: Path) -> None:
    registry = tmp_path / "ports.json"
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        d.mkdir()
        (d / "state.json").write_text("{}")
    first = ports.claim_ports(registry, str(a), 40)
    second = ports.claim_ports(registry, str(b), 40)
    assert not set(first) & set(second)
    # a fleet whose state is gone loses its claim; releasing forgets it too
    (a / "state.json").unlink()
    ports.claim_ports(registry, str(b), 40)
    assert set(json.loads(registry.read_text())) == {str(b)}
    ports.release_ports(registry, str(b))
    assert json.loads(registry.read_text()) == {}
