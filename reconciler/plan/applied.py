"""The record of what pincompile last applied to an object, kept on the object itself (an
annotation every reconciler sees), so that a pass can tell without a dry-run that applying
again would change nothing.

An object is *provably unchanged* when both hold:

* its record (:data:`ANNOTATION`, the digest of the content we applied, without the
  revision annotation) equals the digest of what we would apply now: so the fields we
  own are exactly the fields we would set (server-side apply gives a manager the fields
  of its last apply), and no field we stopped setting would be removed;
* every value we would set is the live value (:func:`covers`): nobody changed one of
  our fields since (another manager's label on top is theirs, and stays).

Anything else — no record, another digest, a value that differs, even only in form
(``0.5`` against ``500m``), a list of another length, a field the live object lacks (but
for :data:`OMITTED_WHEN_ZERO`) — is *unsure*, and the object gets the server-side dry-run
as before. So a field changed by anyone is still found.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import orjson

from reconciler.model import Obj
from reconciler.plan.diff import ANNOTATION_APPLIED, VOLATILE_ANNOTATIONS, VOLATILE_METADATA

ANNOTATION = ANNOTATION_APPLIED


def digest(obj: Obj, kept: dict[str, Any] | None = None) -> str:
    """A short digest of the content ``obj`` would apply (what :func:`diff.normalize`
    keeps: no revision, no record), without copying it (``kept``: its
    :func:`_kept_metadata`, when already known)."""
    content = {k: v for k, v in obj.items() if k not in ("status", "metadata")}
    kept = _kept_metadata(obj) if kept is None else kept
    return hashlib.sha256(_canonical([kept, content])).hexdigest()[:20]


def _kept_metadata(obj: Obj) -> dict[str, Any]:
    """The metadata :func:`digest` covers: none the server or the revision owns."""
    meta = obj.get("metadata") or {}
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items()
                   if k not in VOLATILE_ANNOTATIONS}
    kept = {k: v for k, v in meta.items()
            if k not in VOLATILE_METADATA and k != "annotations"}
    if annotations:
        kept["annotations"] = annotations
    return kept


_SMALL_FLOAT = re.compile(rb"\de-\d")
_NOT_AS_JSON_DUMPS = (b"0.0000", b"null", b"\x7f")
"""Where orjson's bytes may differ from ``json.dumps``'s: a float below 1e-4 (``1e-05``
against ``0.00001``, ``2.5e-07`` against ``2.5e-7``), NaN and infinities (``null``), DEL
(which json escapes)."""


def _canonical(value: Any) -> bytes:
    """``json.dumps(value, sort_keys=True, separators=(",", ":"))`` as bytes — the form
    every record was made with — by orjson (10x faster, in C) where its bytes are provably
    the same: ASCII output without the forms above; else by ``json`` itself."""
    try:
        blob = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # an integer past 64 bits
        blob = b"\x80"
    if blob.isascii() and not any(part in blob for part in _NOT_AS_JSON_DUMPS) and (
            b"e-" not in blob or not _SMALL_FLOAT.search(blob)):
        return blob
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


class Digests:
    """The digests a pass has computed, by object identity (a pass never changes a desired
    object in place), so each object is serialized once, not for its app's digest and
    again for its record. ``previous``: the last pass's, for a long-running reconciler: an
    object whose every part but its metadata is the very object the last pass digested
    (an incremental compile gives an unchanged app's objects a new revision by a shallow
    copy), with the same metadata but for the revision, has the same digest."""

    def __init__(self, previous: Digests | None = None) -> None:
        self._seen: dict[int, tuple[Obj, str]] = {}
        self._by_parts: dict[tuple[tuple[str, int], ...], tuple[Obj, dict[str, Any], str]] = {}
        self._before = previous._by_parts if previous is not None else {}

    def of(self, obj: Obj) -> str:
        """:func:`digest` of ``obj``, computed once per object."""
        seen = self._seen.get(id(obj))
        if seen is not None and seen[0] is obj:
            return seen[1]
        parts = tuple([(k, id(v)) for k, v in obj.items() if k != "metadata"])
        kept = _kept_metadata(obj)
        before = self._before.get(parts)
        # a hit: its parts are held by that object, so their ids were not reused
        value = before[2] if before is not None and before[1] == kept else digest(obj, kept)
        self._seen[id(obj)] = (obj, value)  # holds obj: its id is not reused meanwhile
        self._by_parts[parts] = (obj, kept, value)
        return value

    def carried(self) -> Digests:
        """A new pass's digests that reuse this pass's where :meth:`of` can prove them."""
        return Digests(self)


def stamp(obj: Obj, basis: Obj | None = None, digests: Digests | None = None) -> Obj:
    """``obj`` carrying the record of its content (of ``basis`` when given: an autoscaled
    workload's content without the replicas its HPA owns). A shallow copy: ``obj`` is
    left as it is. ``digests``: the pass's, to reuse."""
    meta = obj["metadata"]
    content = obj if basis is None else basis
    annotations = {**(meta.get("annotations") or {}),
                   ANNOTATION: digests.of(content) if digests else digest(content)}
    return {**obj, "metadata": {**meta, "annotations": annotations}}


def recorded(obj: Obj | None) -> str | None:
    return (((obj or {}).get("metadata") or {}).get("annotations") or {}).get(ANNOTATION)


def unchanged(desired: Obj, live: Obj) -> bool:
    """Whether applying ``desired`` (stamped) to ``live`` provably changes nothing."""
    record = recorded(desired)
    return record is not None and record == recorded(live) and covers(desired, live)


def stale(desired: Obj, live: Obj, predicted: Obj) -> bool:
    """Whether an object a dry-run found unchanged is still worth applying, only to record
    it: its live record is not the one ``desired`` carries (what we apply changed in a way
    the server's answer does not show: a field we stopped setting that the server
    defaults to the same value, an autoscaled workload's replicas we no longer set, no
    record at all), and the record would answer once applied (``predicted``, the
    dry-run's answer, passes the check). Without that write every later pass dry-runs the
    object again, until its content next changes."""
    return recorded(desired) != recorded(live) and unchanged(desired, predicted)


OMITTED_WHEN_ZERO = frozenset({("PriorityClass", "globalDefault")})
"""Top-level fields (kind, field) of a plain, non-pointer Go type with ``omitempty``: the
API server never returns them at their zero value, so a ``false`` we set is absent from
the live object (which made every PriorityClass a dry-run in every pass). A pointer field
set to ``false`` is returned as set: absent, it was removed, and the object is unsure."""


def covers(desired: Obj, live: Obj) -> bool:
    """Whether every value ``desired`` sets is already the live value (metadata the
    server or the revision owns left out)."""
    for key, want in desired.items():
        if key == "status":
            continue
        if key == "metadata":
            if not _covers_metadata(want, live.get("metadata") or {}):
                return False
        elif key not in live:
            if not (want is False and (desired.get("kind"), key) in OMITTED_WHEN_ZERO):
                return False
        elif not _covers(want, live[key]):
            return False
    return True


def _covers_metadata(want: dict[str, Any], have: dict[str, Any]) -> bool:
    for key, value in want.items():
        if key in VOLATILE_METADATA:
            continue
        if key == "annotations":
            mine = {k: v for k, v in (value or {}).items() if k not in VOLATILE_ANNOTATIONS}
            if not _covers(mine, have.get("annotations") or {}):
                return False
        elif key not in have or not _covers(value, have[key]):
            return False
    return True


_ABSENT = object()


def _covers(want: Any, have: Any) -> bool:
    """Whether ``have`` holds every value of ``want``: dicts by key, lists item by item and
    of the same length, a bool only by a bool. Scalars are compared in the loop, not by a
    call each (a call per value was most of the check's cost)."""
    if isinstance(want, dict):
        if not isinstance(have, dict):
            return False
        pairs: Any = ((value, have.get(key, _ABSENT)) for key, value in want.items())
    elif isinstance(want, list):
        if not isinstance(have, list) or len(want) != len(have):
            return False
        pairs = zip(want, have, strict=True)
    else:
        return _same_scalar(want, have)
    for value, held in pairs:
        if isinstance(value, dict | list):
            if not _covers(value, held):
                return False
        elif value != held or (type(value) is bool) is not (type(held) is bool):
            return False
    return True


def _same_scalar(want: Any, have: Any) -> bool:
    if isinstance(want, bool) or isinstance(have, bool):
        return want is have
    return bool(want == have)
