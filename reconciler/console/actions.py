"""The actions the app page offers (the API's, reconciler/api/actions.py): restart, rollout
pause and resume, rerun; which app kinds each is for, the verb that authorizes it (the
API's, :data:`reconciler.api.access.ACTIONS`), what its confirmation says, and its outcome
as the page shows it (the API's answer: 202 or 200 with its message, or the refusal)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus

from fastapi import HTTPException

from reconciler.api import rerun
from reconciler.api.actions import (
    ActionGateway,
    Run,
    pause_app,
    resume_app,
    start_rerun,
    start_restart,
)
from reconciler.model import AppKey
from reconciler.rollout import pause, restart


@dataclass(frozen=True)
class Action:
    slug: str
    """Its part of the URL: ``/apps/KIND/PROJECT/NAME/actions/SLUG``."""
    verb: str
    """The API's action that authorizes it (``update <kind>s/<subresource>``)."""
    label: str
    confirm: str
    """The confirmation page's button."""
    explain: str
    """What it does, on the confirmation page."""
    for_kind: Callable[[str], bool]
    run: Run
    status: int
    """The API's status when it is done or started."""


ACTIONS = {action.slug: action for action in (
    Action("restart", "restart", "Restart", "Yes, restart",
           "Every Deployment and DaemonSet of the app gets new pods, zone by zone: the next "
           "zone starts when the previous one has rolled out; the events show each zone. "
           "Nothing in the app's spec changes.",
           lambda kind: restart.why_not_restartable(kind) is None, start_restart, 202),
    Action("pause", "rollout", "Pause rollout", "Yes, pause the rollout",
           "The zone being rolled out finishes; the next zone waits until the rollout is "
           "resumed.",
           lambda kind: kind in pause.ROLLOUT_APP_KINDS,
           pause_app, 200),
    Action("resume", "rollout", "Resume rollout", "Yes, resume the rollout",
           "The next zone starts at the reconciler's next pass.",
           lambda kind: kind in pause.ROLLOUT_APP_KINDS,
           resume_app, 200),
    Action("rerun", "rerun", "Rerun", "Yes, run it again",
           "The app's Jobs (or its training job) are deleted, with their pods, and created "
           "again, one after the other.",
           lambda kind: rerun.why_not_rerunnable(kind) is None, start_rerun, 202),
)}


def offered(kind: str) -> list[Action]:
    """The actions an app of ``kind`` supports, in the page's order."""
    return [action for action in ACTIONS.values() if action.for_kind(kind)]


@dataclass(frozen=True)
class Outcome:
    """What an action answered, as the page shows it."""

    label: str
    status: int
    message: str

    @property
    def phrase(self) -> str:
        try:
            return HTTPStatus(self.status).phrase
        except ValueError:
            return "Error"

    @property
    def ok(self) -> bool:
        return self.status < 300


def perform(action: Action, gateway: ActionGateway, app: AppKey, user: str) -> Outcome:
    """Run ``action`` as the API does (blocking: it reads the clusters)."""
    try:
        answer = action.run(gateway, app, user)
    except HTTPException as exc:
        return Outcome(action.label, exc.status_code, str(exc.detail))
    return Outcome(action.label, action.status, answer.message)
