"""``KIND/PROJECT/NAME``: how every command names one spec (``explain``, ``set``, ``status``,
``fleet load``)."""

from __future__ import annotations

import difflib
from functools import cache
from typing import Any, NamedTuple

from pydantic import TypeAdapter, ValidationError

EXAMPLE = "PinApp/search/search-api"


class AppRefError(ValueError):
    """The text is not ``KIND/PROJECT/NAME``; the message says which part and why."""


class AppRef(NamedTuple):
    """One spec's identity; equal to the ``(kind, project, name)`` key the catalog uses."""

    kind: str
    project: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind}/{self.project}/{self.name}"


def parse_app_ref(text: str) -> AppRef:
    """``PinApp/search/search-api`` -> AppRef (the kind's case is forgiven). Raises
    AppRefError naming the part that is wrong."""
    from pincompile.models import KINDS, PLATFORM_KINDS

    shown = text if len(text) <= 120 else f"{text[:100]}...({len(text)} characters)"
    parts = text.strip().split("/", 3)
    if len(parts) != 3:
        many = "more than 3" if len(parts) > 3 else str(len(parts))
        raise AppRefError(f"'{shown}' is not KIND/PROJECT/NAME: {many} part(s) "
                          f"separated by '/', expected 3 (e.g. {EXAMPLE})")
    kind_text, project, name = parts
    kind = {k.lower(): k for k in KINDS}.get(kind_text.lower())
    if kind is None:
        close = difflib.get_close_matches(kind_text[:60], list(KINDS), 1, 0.6)
        hint = f"did you mean '{close[0]}'?" if close else f"kinds: {', '.join(KINDS)}"
        raise AppRefError(f"'{shown}': KIND '{kind_text[:60]}' is not a kind; {hint}")
    for part, value in (("PROJECT", project), ("NAME", name)):
        if part == "PROJECT" and kind in PLATFORM_KINDS and not value:
            continue  # platform kinds belong to no project: Cluster//use1a-general-01
        try:
            _names().validate_python(value)
        except ValidationError as exc:
            why = exc.errors()[0]["msg"].removeprefix("Value error, ")
            raise AppRefError(f"'{shown}': {part}: {why[:200]} (e.g. {EXAMPLE})") from None
    return AppRef(kind, project, name)


@cache
def _names() -> TypeAdapter[Any]:
    """The spec language's rule for ``metadata.name`` and ``metadata.project``."""
    from pincompile.models.types import Name

    return TypeAdapter(Name)
