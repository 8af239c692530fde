"""Live against desired: normalize both sides and show what differs.

The desired side is the result of a *server-side dry-run apply*, so every default the API
server adds is on both sides and never shows as drift. Normalizing drops what the server
or the controllers own (managedFields, resourceVersion, uid, generation,
creationTimestamp, status) and the ``pincompute.io/revision`` annotation, so a commit that
changes nothing for an object shows nothing.
"""

from __future__ import annotations

import copy
import difflib
from typing import Any

from pincompile.contract import to_yaml
from pincompile.manifest import ANNOTATION_REVISION
from reconciler.model import Obj

VOLATILE_METADATA = ("managedFields", "resourceVersion", "uid", "generation",
                     "creationTimestamp", "selfLink")
ANNOTATION_APPLIED = "pincompute.io/applied-digest"
"""pincompile's record of its last apply (see :mod:`reconciler.plan.applied`): bookkeeping,
never a difference."""
VOLATILE_ANNOTATIONS = (ANNOTATION_REVISION, ANNOTATION_APPLIED,
                        "kubectl.kubernetes.io/last-applied-configuration")


def normalize(obj: Obj | None) -> Obj:
    """A copy of ``obj`` without the fields nobody configures."""
    if not obj:
        return {}
    out = copy.deepcopy(obj)
    out.pop("status", None)
    meta: dict[str, Any] = out.get("metadata") or {}
    for key in VOLATILE_METADATA:
        meta.pop(key, None)
    annotations = meta.get("annotations") or {}
    for key in VOLATILE_ANNOTATIONS:
        annotations.pop(key, None)
    if not annotations:
        meta.pop("annotations", None)
    return out


def same(live: Obj | None, predicted: Obj | None) -> bool:
    """Whether applying would change nothing that matters."""
    return normalize(live) == normalize(predicted)


def unified(live: Obj | None, predicted: Obj | None, name: str) -> str:
    """A unified diff from the live object to what applying would make of it."""
    before = to_yaml(normalize(live)) if live else ""
    after = to_yaml(normalize(predicted)) if predicted else ""
    return "".join(difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True),
        fromfile=f"live/{name}", tofile=f"desired/{name}"))


