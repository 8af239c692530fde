"""What output files are compared and named by: each file's content digest, and an
order-free signature of a whole output tree (the id its marker records)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable


def digest(text: str | bytes) -> bytes:
    """The digest output files are compared by (SHA-256, which CPUs compute in hardware;
    why not BLAKE2: bench/RESULTS.md, Tuning)."""
    data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
    return hashlib.sha256(data).digest()[:16]


def tree_sig(files: Iterable[tuple[str, bytes]]) -> int:
    """An order-free signature of (output path, content digest) pairs: the XOR of their
    hashes, so an update adjusts it by the files it changes alone."""
    sig = 0
    for path, sha in files:
        sig ^= int.from_bytes(hashlib.blake2b(path.encode("utf-8", "surrogateescape") + b"\0"
                                              + sha, digest_size=16).digest(), "big")
    return sig


def tree_id(sig: int) -> str:
    """What the output directory's marker records: the same output, the same id."""
    return f"{sig:032x}"
