"""A paused rollout: who paused it is an annotation on the app's resource on the host
(written by the API's ``rollout pause`` with a field manager of its own, so the
reconciler's apply of the spec never removes it). While it is there, a zone-by-zone
rollout finishes the zone it is in and does not promote the next one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reconciler.model import Obj

PAUSED_BY_ANNOTATION = "pincompute.io/rollout-paused-by"
PAUSED_AT_ANNOTATION = "pincompute.io/rollout-paused-at"
PAUSE_MANAGER = "pincompile-api-rollout"
"""The field manager of the pause annotations (never ``pincompile``'s)."""
ROLLOUT_APP_KINDS = frozenset({"PinApp", "PinterestService"})
"""App kinds whose Deployments roll out zone by zone."""


def paused_by(cr: Mapping[str, Any] | None) -> str | None:
    """Who paused the app's rollout (its resource's annotation), or None."""
    annotations = ((cr or {}).get("metadata") or {}).get("annotations") or {}
    user = annotations.get(PAUSED_BY_ANNOTATION)
    return str(user) if user else None


def pause_patch(ref: Obj, user: str, at: str) -> Obj:
    """The server-side apply that pauses: ``ref`` (the resource's identity) with the
    annotations."""
    return {**ref, "metadata": {**ref["metadata"], "annotations": {
        PAUSED_BY_ANNOTATION: user, PAUSED_AT_ANNOTATION: at}}}


def resume_patch(ref: Obj) -> Obj:
    """The server-side apply that resumes: the same manager applies no annotation, so the
    API server drops the ones it set (and only those)."""
    return {**ref, "metadata": dict(ref["metadata"])}
