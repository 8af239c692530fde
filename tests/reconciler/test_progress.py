"""``apply``'s progress per cluster: plain lines for logs and pipes, a table redrawn in
place on a terminal."""

from __future__ import annotations

import io

from rich.console import Console

from reconciler.progress import LiveProgress, PlainProgress, Progress, for_output


class Ticks:
    """A clock that moves a quarter of a second each time it is read."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 0.25
        return self.now


def _pass(progress: Progress) -> None:
    progress.planned("rt-a", 30, 12)
    progress.planned("rt-b", 30, 0)
    progress.writing("rt-a")
    for _ in range(12):
        progress.applied("rt-a", at_once=6)
    progress.line("rt-a: create Deployment/shop/web")
    progress.health("rt-a", 1, 3)
    progress.health("rt-a", 3, 3)
    progress.failed("rt-c", "connection refused")
    progress.close()


def test_plain_lines_say_each_step_per_cluster() -> None:
    lines: list[str] = []
    _pass(PlainProgress(lines.append, clock=Ticks()))
    assert lines == [
        "rt-a: 12 to write of 30 objects",
        "rt-b: 0 to write of 30 objects",
        "rt-a: applied 10/12 (4.0/s, 6 at once)",  # one every quarter of a second
        "rt-a: applied 12/12 (4.0/s, 6 at once)",
        "rt-a: create Deployment/shop/web",
        "rt-a: healthy 1/3",
        "rt-a: healthy 3/3",
        "rt-c: FAILED: connection refused",
    ]


def test_the_terminal_table_renders_every_cluster_and_the_log_above_it() -> None:
    screen = io.StringIO()
    progress = LiveProgress(Console(file=screen, force_terminal=True, width=110),
                            clock=Ticks())
    _pass(progress)
    out = screen.getvalue()
    assert "\x1b[" in out  # drawn with terminal control sequences
    last = out[out.rindex("CLUSTER"):]
    for row in ("rt-a", "30", "12/12", "4.0/s", "3/3", "healthy", "WRITES/S"):
        assert row in last
    assert "rt-b" in last and "in sync" in last
    assert "FAILED: connection refused" in last
    assert "rt-a: create Deployment/shop/web" in out


def test_only_a_terminal_gets_the_live_table() -> None:
    assert isinstance(for_output(print, terminal=False), PlainProgress)
    live = for_output(print, terminal=True)
    assert isinstance(live, LiveProgress)
    live.close()
