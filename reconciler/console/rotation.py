"""The member panel's rotation actions (the API's, reconciler/api/rotations.py): start a
rotation of a member cluster (its batch and pause: the Cluster's rotation policy's
unless changed on the confirmation page), pause and resume one in progress; which of them
a member offers now, and their outcome as the overview shows it (the API's answer)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from fastapi import HTTPException

from reconciler.api.rotations import PAUSE_MAX, checked_pause, set_paused, start
from reconciler.clients.connect import Connection
from reconciler.console.actions import Outcome
from reconciler.console.members import MemberHealth
from reconciler.rotation.plan import MAX_BATCH

BATCH = re.compile(r"[0-9]{1,3}")


@dataclass(frozen=True)
class RotationAction:
    slug: str
    """Its part of the URL: ``/clusters/NAME/rotation/SLUG``."""
    label: str
    confirm: str
    explain: str
    status: int
    """The API's status when it is done or requested."""


ROTATION_ACTIONS = {action.slug: action for action in (
    RotationAction("start", "Rotate nodes", "Yes, rotate its nodes",
                   "Every node of the cluster is replaced, batch by batch: cordoned, its pods "
                   "evicted through the Eviction API (PodDisruptionBudgets honoured), the "
                   "moved apps back to Ready, then the node removed and its replacement "
                   "waited for. serve's leader of the cluster's shard runs it.", 202),
    RotationAction("pause", "Pause rotation", "Yes, pause the rotation",
                   "The batch under way finishes; no new one starts until the rotation is "
                   "resumed.", 200),
    RotationAction("resume", "Resume rotation", "Yes, resume the rotation",
                   "The next batch starts at serve's next round (after the pause between "
                   "batches, within the policy's windows).", 200),
)}


@dataclass(frozen=True)
class FormField:
    """An input of a confirmation page."""

    name: str
    label: str
    value: str
    hint: str


def offered_rotation(member: MemberHealth) -> list[RotationAction]:
    """Start while no rotation is in progress, pause while one is and is not paused,
    resume while one is paused."""
    if member.rotation_paused_by:
        return [ROTATION_ACTIONS["resume"]]
    return [ROTATION_ACTIONS["pause" if member.rotation_busy else "start"]]


def rotation_fields(action: RotationAction, member: MemberHealth | None
                    ) -> list[FormField]:
    """The start page's batch and pause, the Cluster's rotation policy's by default."""
    if action.slug != "start":
        return []
    return [FormField("batch", "Batch", member.rotation_batch if member else "",
                      f"nodes replaced at once, 1 to {MAX_BATCH}; empty: the policy's"),
            FormField("pause", "Pause", member.rotation_pause if member else "",
                      "wait between batches: 0s, 30s, 2m, at most 24h; empty: the policy's")]


def checked_batch(value: str) -> int | None:
    """A batch typed in the form (None: empty, the policy's); 422 when it is not a whole
    number from 1 to ``MAX_BATCH`` (the API's bounds)."""
    value = value.strip()
    if not value:
        return None
    if not BATCH.fullmatch(value) or not 1 <= int(value) <= MAX_BATCH:
        raise HTTPException(422, f"batch: {value[:20]!r} is not a whole number from 1 to "
                                 f"{MAX_BATCH}")
    return int(value)


def pause_of(value: str) -> str | None:
    """A pause typed in the form (None: empty, the policy's); 422 when it is not a
    duration of at most 24h, as the API answers."""
    value = value.strip()
    if len(value) > PAUSE_MAX:
        raise HTTPException(422, f"pause: {value[:PAUSE_MAX]!r}... is longer than "
                                 f"{PAUSE_MAX} characters")
    return checked_pause(value or None)


def perform_rotation(action: RotationAction, host: Connection | None, name: str, user: str,
                     form: Mapping[str, str]) -> Outcome:
    """Run ``action`` on cluster ``name`` as the API does (blocking: it reads and writes
    the host)."""
    try:
        if action.slug == "start":
            answer = start(host, name, user, None, checked_batch(form.get("batch", "")),
                           pause_of(form.get("pause", "")))
        else:
            answer = set_paused(host, name, user, action.slug == "pause")
    except HTTPException as exc:
        return Outcome(action.label, exc.status_code, str(exc.detail))
    return Outcome(action.label, action.status, answer.message)
