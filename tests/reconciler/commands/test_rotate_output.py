"""What `pincompile rotate --status` prints for people."""

from __future__ import annotations

import pytest

from reconciler.api.rotation_models import RotationAnswer
from reconciler.commands.rotate import _print


def test_status_is_a_line_about_the_rotation_then_a_row_per_node(
        capsys: pytest.CaptureFixture[str]) -> None:
    answer = RotationAnswer(cluster="east", pausedBy="bob", request={"id": "r1"}, status={
        "id": "r1", "requestedBy": "ada", "phase": "Waiting",
        "message": "waiting for a Ready replacement of n2 (pool general)",
        "nodes": [{"name": "n1", "pool": "general", "state": "Replaced",
                   "replacement": "n1-v2", "version": "v2"},
                  {"name": "n2", "pool": "general", "state": "Removed"}]})
    _print(answer, "text")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ("east: rotation r1 by ada: Waiting (paused by bob): waiting for a "
                        "Ready replacement of n2 (pool general)")
    assert lines[1].split() == ["NODE", "POOL", "STATE", "REPLACEMENT", "VERSION", "SINCE"]
    assert lines[2].split() == ["n1", "general", "Replaced", "n1-v2", "v2", "-"]
    assert lines[3].split() == ["n2", "general", "Removed", "-", "-", "-"]


def test_no_rotation_yet_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    _print(RotationAnswer(cluster="east", request={"id": "r9"}), "text")
    assert capsys.readouterr().out == "east: no rotation has run; r9 is requested\n"
