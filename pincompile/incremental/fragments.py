"""``placement.json`` from per-workload parts: unchanged workloads' entries kept as
written, the changed ones spliced in."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping

from pincompile.emit.output import json_text
from pincompile.placement.model import Decision, Key, Plan


def fragment(decision: Decision) -> str:
    """One workload's entry of ``placement.json`` as it appears there (indented)."""
    text = json_text(decision.to_json())
    return text.replace("\n", "\n    ")


_ENTRY = re.compile(r',\n(?=    ")')
_WORKLOADS = '\n  "workloads": '
_END = "\n  }\n}\n"


def fragments_of(text: str) -> dict[Key, str] | None:
    """The workloads' entries of a ``placement.json`` :func:`placement_text` wrote (None
    when it does not look like one)."""
    at = text.rfind(_WORKLOADS)
    if at < 0:
        return None
    body = text[at + len(_WORKLOADS):]
    if body == "{}\n}\n":
        return {}
    if not body.startswith("{\n") or not body.endswith("\n  }\n}\n"):
        return None
    found: dict[Key, str] = {}
    for part in _ENTRY.split(body[2:-len("\n  }\n}\n")]):
        end = part.find('": ')
        if not part.startswith('    "') or end < 0:
            return None
        key = tuple(json.loads(part[4:end + 1]).split("/"))
        if len(key) != 3:
            return None
        found[key] = part[end + 3:]  # type: ignore[index]
    return found


def placement_text(plan: Plan, fragments: Mapping[Key, str]) -> str:
    """``placement.json``: :func:`pincompile.emit.output.to_json` of ``plan.to_json()``, with
    every workload's entry taken from ``fragments`` (``workloads`` sorts last)."""
    whole = plan.to_json()
    whole.pop("workloads")
    head = json_text(whole)
    keys = sorted(fragments)
    if not keys:
        body = "{}"
    else:
        body = "{\n" + ",\n".join(
            f"    {json_text('/'.join(k))}: {fragments[k]}"
            for k in keys) + "\n  }"
    return head[:-2] + f',\n  "workloads": {body}\n}}\n'


def splice_placement(old: bytes, plan: Plan, drop: Iterable[Key],
                     fragments: Mapping[Key, str]) -> bytes | None:
    """``placement.json`` as :func:`placement_text` would write it, made from ``old`` (the
    file written last) by replacing the entries of the workloads in ``fragments`` and the
    part before ``workloads`` (``plan`` without its workloads) alone: no other entry is read.

    ``drop``: workloads whose old entries go (those of changed files). None when an entry
    would be added or removed (the caller rebuilds the whole file then)."""
    # the top-level key (no JSON string holds a line break): near the start, found at once
    at = old.find(_WORKLOADS.encode())
    if at < 0 or not old.endswith(_END.encode()):
        return None
    spans: list[tuple[int, int, bytes]] = []
    for key in {*drop, *fragments}:
        needle = f"\n    {json.dumps('/'.join(key), ensure_ascii=False)}: ".encode()
        start = old.find(needle, at)
        if (start < 0) != (key not in fragments):
            return None  # an entry comes or goes
        if start < 0:
            continue
        start += len(needle)
        end = old.find(b',\n    "', start)
        spans.append((start, end if end >= 0 else len(old) - len(_END),
                      fragments[key].encode()))
    whole = plan.to_json()
    whole.pop("workloads")
    head = json.dumps(whole, sort_keys=True, indent=2, ensure_ascii=False, default=str)
    pieces = [head[:-2].encode(), b","]
    done = at
    for start, end, text in sorted(spans):
        pieces += [old[done:start], text]
        done = end
    pieces.append(old[done:])
    return b"".join(pieces)
