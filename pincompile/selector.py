"""Kubernetes label selectors (``-l``): ``team=search,env!=prod,tier in (a,b),!legacy``."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping

MAX_LENGTH = 4096
"""A longer selector is refused (bounded cost)."""

_REQUIREMENT = re.compile(
    r"\s*(?:(?P<not>!)\s*(?P<absent>[\w./-]+)"
    r"|(?P<key>[\w./-]+)\s*(?:(?P<op>==|!=|=)\s*(?P<value>[\w.-]*)"
    r"|\s+(?P<set>in|notin)\s*\((?P<values>[\w.,\s-]*)\))?)\s*(?:,|$)")

Labels = Mapping[str, str]


class SelectorError(ValueError):
    """The text is not a label selector; the message says where."""


def parse_selector(text: str) -> Callable[[Labels], bool]:
    """``text`` as a predicate on a label map; every requirement must hold (an empty
    selector matches everything). Raises SelectorError naming the part that is wrong."""
    if len(text) > MAX_LENGTH:
        raise SelectorError(f"label selector longer than {MAX_LENGTH} characters")
    tests: list[Callable[[Labels], bool]] = []
    position = 0
    while position < len(text.rstrip()):
        found = _REQUIREMENT.match(text, position)
        if found is None or found.end() == position:
            raise SelectorError(f"label selector {text[:100]!r}: cannot read "
                                f"{text[position:position + 40]!r} (expected key=value, "
                                "key!=value, key in (a,b), key notin (a,b), key or !key)")
        tests.append(_requirement(found))
        position = found.end()
    return lambda labels: all(test(labels) for test in tests)


def _requirement(found: re.Match[str]) -> Callable[[Labels], bool]:
    if found["not"]:
        absent = found["absent"]
        return lambda labels: absent not in labels
    key, op = found["key"], found["op"]
    if op is not None:
        value = found["value"]
        if op == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    if found["set"] is not None:
        values = {v.strip() for v in found["values"].split(",") if v.strip()}
        if found["set"] == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    return lambda labels: key in labels


class Targets:
    """Which apps a command acts on: those named (KIND/PROJECT/NAME), those of a project,
    those whose labels a selector matches; every given condition must hold, and none given
    means every app."""

    def __init__(self, refs: Collection[tuple[str, str, str]] = (), project: str | None = None,
                 selector: str | None = None) -> None:
        self.refs = set(refs)
        self.project = project
        self.selector = selector
        self._labels = parse_selector(selector) if selector else None

    @property
    def everything(self) -> bool:
        return not self.refs and self.project is None and self._labels is None

    def matches(self, kind: str, project: str, name: str, labels: Labels | None = None
                ) -> bool:
        return ((not self.refs or (kind, project, name) in self.refs)
                and (self.project is None or project == self.project)
                and (self._labels is None or self._labels(labels or {})))

    def __str__(self) -> str:
        parts = [*sorted("/".join(r) for r in self.refs)]
        parts += [f"project {self.project}"] if self.project else []
        parts += [f"selector {self.selector}"] if self.selector else []
        return ", ".join(parts) or "every app"
