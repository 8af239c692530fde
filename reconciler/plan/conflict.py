"""Conflicts: a desired name held by an object pincompile does not manage, said in words a
user can act on — who owns the object (its field managers) and which immutable field
differs (from the API server's answer to our dry-run)."""

from __future__ import annotations

import re

from reconciler.model import Obj

_FIELD_ERROR = re.compile(r"(?:^|[\s,:\[])((?:metadata|spec|data|rules|roleRef|subjects|type)"
                          r"[\w.\[\]\"'-]*): (?:Invalid value|Forbidden)")
_IMMUTABLE = re.compile(r"field is immutable|may not change fields|may not change once set|"
                        r"updates to \S+ spec for fields other than|"
                        r"Forbidden: .*(?:immutable|cannot be changed)")
"""How the API server says a field cannot change in place: a selector or a Job's template
(``field is immutable``), a Pod (``may not change fields other than``), a Service's
cluster IP (``may not change once set``), a StatefulSet, a claim's spec."""


def is_immutable(message: str) -> bool:
    """Whether an API server's message says a field cannot change in place."""
    return bool(_IMMUTABLE.search(message))


def immutable_fields(message: str) -> list[str]:
    """The field paths an "is invalid" message names (``spec.selector``), in order."""
    found: list[str] = []
    for path in _FIELD_ERROR.findall(message):
        if path not in found:
            found.append(path)
    return found


def owners(live: Obj | None) -> list[str]:
    """The field managers of an object (who created or changed it; not a controller writing
    its status), in managedFields order."""
    found: list[str] = []
    for entry in ((live or {}).get("metadata") or {}).get("managedFields") or []:
        if entry.get("subresource"):
            continue
        manager = str(entry.get("manager") or "")
        if manager and manager not in found:
            found.append(manager)
    return found


def describe(held: Obj | None, rejection: str | None, *, adopting: bool = False) -> str:
    """Why a desired object is a conflict: ``held`` is the live object that holds its name,
    ``rejection`` the dry-run's error message when the apply was refused; ``adopting``:
    ``--adopt`` was given and still cannot take it over."""
    managers = owners(held)
    who = f"field manager {', '.join(managers)}" if managers else "no field manager recorded"
    text = f"held by an object pincompile does not manage ({who})"
    if rejection and is_immutable(rejection):
        fields = immutable_fields(rejection) or ["an immutable field"]
        text += f"; {', '.join(fields)} differs and cannot change in place"
    elif rejection:
        text += f"; applying over it is refused: {rejection}"
    if adopting:
        return text + "; --adopt cannot take it over: remove it, or rename the app"
    return text + "; use --adopt to take it over"
