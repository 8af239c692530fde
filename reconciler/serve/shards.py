"""Which shard reconciles which member cluster: rendezvous (highest-random-weight) hashing.

Every cluster goes to the shard with the highest ``hash(shard, cluster)``, so each cluster
has exactly one shard, every process computes the same answer without talking to the
others, and changing the number of shards moves only the clusters whose winner changed
(about ``1/N`` of them), as Argo CD shards its application controller by cluster.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable


def _weight(shard: int, cluster: str) -> int:
    digest = hashlib.blake2b(f"{shard}\0{cluster}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def shard_of(cluster: str, shards: int) -> int:
    """The shard (``0 .. shards-1``) that reconciles ``cluster``."""
    if shards < 1:
        raise ValueError(f"shards must be at least 1, not {shards}")
    return max(range(shards), key=lambda shard: _weight(shard, cluster))


def assign(clusters: Iterable[str], shards: int) -> dict[int, frozenset[str]]:
    """Every shard's clusters (a shard may get none when there are few clusters)."""
    found: dict[int, set[str]] = {shard: set() for shard in range(shards)}
    for cluster in clusters:
        found[shard_of(cluster, shards)].add(cluster)
    return {shard: frozenset(names) for shard, names in found.items()}
