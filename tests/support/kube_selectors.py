"""Label and field selectors as the API server reads them, for the in-memory cluster."""

from __future__ import annotations

import re
from collections.abc import Callable

from reconciler.model import Obj

Test = Callable[[Obj], bool]
_SET = re.compile(r"^\s*(!?)\s*([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")
_COMPARE = re.compile(r"^\s*([\w./-]+)\s*(==|!=|=)\s*([\w./-]*)\s*$")
_EXISTS = re.compile(r"^\s*(!?)\s*([\w./-]+)\s*$")


def _requirements(text: str) -> list[str]:
    """The comma-separated requirements of a selector (commas inside ``( )`` kept)."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    if current.strip():
        parts.append(current)
    return parts


def _label_test(requirement: str) -> Test:
    if found := _SET.match(requirement):
        _, key, op, values = found.groups()
        allowed = {v.strip() for v in values.split(",") if v.strip()}
        if op == "in":
            return lambda obj: _labels(obj).get(key) in allowed
        return lambda obj: _labels(obj).get(key) not in allowed
    if found := _COMPARE.match(requirement):
        key, op, value = found.groups()
        if op == "!=":
            return lambda obj: _labels(obj).get(key) != value
        return lambda obj: _labels(obj).get(key) == value
    if found := _EXISTS.match(requirement):
        negated, key = found.groups()
        return lambda obj: (key in _labels(obj)) != bool(negated)
    raise ValueError(f"unable to parse requirement: {requirement!r}")


def _labels(obj: Obj) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def labels(selector: str | None) -> Test:
    """Whether an object's labels match ``selector`` (``a=b,c!=d,e in (f,g),!h``)."""
    tests = [_label_test(r) for r in _requirements(selector or "")]
    return lambda obj: all(test(obj) for test in tests)


def fields(selector: str | None) -> Test:
    """Whether an object matches a field selector (``metadata.name=x,involvedObject.kind!=Pod``)."""
    tests = []
    for requirement in _requirements(selector or ""):
        found = _COMPARE.match(requirement)
        if found is None:
            raise ValueError(f"invalid field selector: {requirement!r}")
        path, op, value = found.groups()
        tests.append((path.split("."), op == "!=", value))

    def test(obj: Obj) -> bool:
        for path, negated, value in tests:
            held: object = obj
            for step in path:
                held = held.get(step, "") if isinstance(held, dict) else ""
            if (str(held or "") == value) == negated:
                return False
        return True

    return test
