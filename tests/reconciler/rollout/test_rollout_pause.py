"""The pause gate: a paused rollout finishes its zone and does not promote the next one,
says who paused it (once), and goes on after a resume."""

from __future__ import annotations

from typing import Any

from reconciler.rollout import PROGRESSING, State
from reconciler.rollout.pause import PAUSED_BY_ANNOTATION, pause_patch, paused_by, resume_patch
from reconciler.rollout.plan import AppRollout, advance
from reconciler.rollout.step import paused_apps
from reconciler.status.document import app_status

APP = ("PinApp", "shop", "web")


def rolled(generation: int = 2) -> dict[str, Any]:
    return {"kind": "Deployment", "metadata": {"name": "web", "generation": generation},
            "spec": {"replicas": 1},
            "status": {"observedGeneration": generation, "replicas": 1, "updatedReplicas": 1,
                       "availableReplicas": 1}}


def plan(paused: str | None, state: State | None = None) -> AppRollout:
    desired = {c: rolled() for c in ("a", "b", "c")}
    return AppRollout(APP, desired, {"a": "z1", "b": "z2", "c": "z3"},
                      state or State("t", "rev2", ["z1", "z2", "z3"], since=0.0), 60.0,
                      paused_by=paused)


def drive(rollout: AppRollout) -> tuple[list[str], list[str], list[str]]:
    """Advance once: (clusters applied, event reasons, messages)."""
    applied: list[str] = []
    events: list[tuple[str, str]] = []
    advance(rollout, apply=lambda c, _o: applied.append(c), fetch=lambda _c, o: o,
            record=lambda r, m: events.append((r, m)), save=lambda _s: None,
            clock=lambda: 1.0, sleep=lambda _s: None)
    return applied, [r for r, _ in events], [m for _, m in events]


def test_a_paused_rollout_holds_the_next_zone_and_says_who_paused_it_once() -> None:
    rollout = plan("alice")
    applied, reasons, messages = drive(rollout)
    assert applied == [] and reasons == ["RolloutPaused"]
    assert "paused by alice" in messages[0] and "zone z2 waits" in messages[0]
    state = rollout.state
    assert (state.zone, state.phase, state.paused_by) == (0, PROGRESSING, "alice")
    assert State.from_json(state.to_json()) == state  # survives a restarted reconciler
    again = plan("alice", State.from_json(state.to_json()))
    assert drive(again)[:2] == ([], [])  # the next pass: still held, nothing recorded


def test_a_resumed_rollout_promotes_the_next_zone_and_records_the_resume() -> None:
    held = plan("alice")
    drive(held)
    resumed = plan(None, held.state)
    applied, reasons, _ = drive(resumed)
    assert applied == ["b", "c"]
    assert reasons == ["RolloutResumed", "ZonePromoted", "ZonePromoted", "RolloutComplete"]
    assert resumed.state.paused_by == ""


def test_the_last_zone_is_never_held_and_an_unpaused_rollout_is_untouched() -> None:
    last = plan("alice", State("t", "rev2", ["z1", "z2", "z3"], zone=2, since=0.0))
    assert drive(last)[1] == ["RolloutComplete"]
    assert drive(plan(None))[1] == ["ZonePromoted", "ZonePromoted", "RolloutComplete"]


def test_the_pause_is_an_annotation_of_its_own_manager_and_a_paused_app_says_so() -> None:
    ref = {"apiVersion": "pincompute.io/v1", "kind": "PinApp",
           "metadata": {"name": "web", "namespace": "shop"}}
    paused = pause_patch(ref, "alice", "2026-11-26T12:00:00Z")
    assert paused_by(paused) == "alice" and paused_by(resume_patch(ref)) is None
    assert ref["metadata"] == {"name": "web", "namespace": "shop"}  # not changed in place
    assert paused_apps({APP: paused, ("PinApp", "shop", "api"): ref}) == {APP: "alice"}
    assert PAUSED_BY_ANNOTATION not in str(resume_patch(ref))
    rollout = plan("alice")
    drive(rollout)
    status = app_status([], revision="rev2", rollout=rollout.state.to_json(), previous=None,
                        applied=False)
    assert status["phase"] == "Progressing" and "paused by alice" in status["message"]
    assert status["rollout"]["pausedBy"] == "alice"
