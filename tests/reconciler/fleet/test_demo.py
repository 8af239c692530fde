"""The last line of `make demo`."""

from __future__ import annotations


def test_demo_summary_names_every_app_that_is_not_healthy_or_suspended() -> None:
    from reconciler.fleet.demo import summary

    def row(kind: str, name: str, phase: str, message: str = "") -> dict:
        return {"kind": kind, "project": "p", "name": name,
                "status": {"phase": phase, **({"message": message} if message else {})}}

    line, ok = summary([row("PinApp", "a", "Healthy"),
                        row("PinterestJobSet", "b", "Completed"),
                        row("PinApp", "c", "Suspended"), row("Cluster", "x", "Unknown")])
    assert ok and line == ("demo: 1 of 3 apps Healthy, 1 Completed (jobs that finished), 1 "
                           "Suspended on purpose (paused or stopped in the examples); every "
                           "app is Healthy, Completed or Suspended on purpose")
    line, ok = summary([row("PinApp", "a", "Healthy"),
                        row("PinterestTrainingJob", "t", "Progressing", "waiting")])
    assert not ok
    assert line.endswith("NOT Healthy: PinterestTrainingJob/p/t Progressing (waiting)")
