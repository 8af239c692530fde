"""Small readers shared by the per-kind rules: status fields, conditions, generations."""

from __future__ import annotations

from typing import Any

from reconciler.model import Obj


def spec(obj: Obj) -> dict[str, Any]:
    """``obj.spec`` (an empty dict when absent)."""
    return obj.get("spec") or {}


def status(obj: Obj) -> dict[str, Any]:
    """``obj.status`` (an empty dict when absent, as on a just-created object)."""
    return obj.get("status") or {}


def count(value: Any) -> int:
    """A replica or pod count; absent counts are 0 (the API server omits zeros)."""
    return int(value or 0)


def name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def condition(obj: Obj, kind: str) -> dict[str, Any] | None:
    """The status condition of type ``kind``, or None."""
    for cond in status(obj).get("conditions") or []:
        if cond.get("type") == kind:
            return dict(cond)
    return None


def is_true(cond: dict[str, Any] | None) -> bool:
    return cond is not None and cond.get("status") == "True"


def is_false(cond: dict[str, Any] | None) -> bool:
    return cond is not None and cond.get("status") == "False"


def reason_and_message(cond: dict[str, Any], default: str = "") -> str:
    """``Reason: message`` of a condition, whichever parts it has."""
    reason, message = cond.get("reason") or "", cond.get("message") or ""
    if reason and message:
        return f"{reason}: {message}"
    return reason or message or default


def unobserved(obj: Obj) -> str | None:
    """Why the controller has not yet seen the latest spec, or None when it has.

    A controller writes ``status.observedGeneration`` after acting on a spec; until it
    equals ``metadata.generation`` every other status field describes an older spec.
    """
    generation = count((obj.get("metadata") or {}).get("generation"))
    observed = count(status(obj).get("observedGeneration"))
    if observed >= generation:
        return None
    if observed == 0:
        return "waiting for the controller to observe the new object"
    return f"waiting for the controller to observe generation {generation} (observed {observed})"
