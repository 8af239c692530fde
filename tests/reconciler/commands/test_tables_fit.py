"""Every table the CLI prints (status, apply's summary, get apps|pods, events, history)
goes through one printer: ``-o table`` fits the terminal (80 columns, or $COLUMNS, when
stdout is not one), cutting long cells with "…" and leaving out the least needed columns;
``-o wide`` prints every cell in full."""

from __future__ import annotations

from typing import Any

import pytest

from pincompile.commands.common import columns, table_width
from reconciler.commands.status import render, render_clusters, render_table

MESSAGE = ("Deployment shop/web in use1a-general-01: 1 of 3 pods not ready: container main "
           "is waiting: CrashLoopBackOff (back-off 5m0s restarting failed container main); "
           "rollout halted in zone use1b after 60s: health timeout exceeded")
CLUSTERS = [{"name": f"use{z}-general-0{i}", "phase": "Healthy", "readyReplicas": 3,
             "replicas": 3} for z in ("1a", "1b", "2a") for i in (1, 2)]


def status_row(name: str, message: str = MESSAGE) -> dict[str, Any]:
    """A row as the host stores it for an app spread over 6 clusters and failing: the
    rows `status` printed were 260-345 characters long."""
    return {"kind": "PinterestService", "project": "search", "name": name,
            "statusTime": "2026-11-26T11:57:00Z",
            "status": {"phase": "Degraded", "ready": "17/18", "clusters": CLUSTERS,
                       "rollout": {"phase": "Halted", "zone": "use1b"},
                       "failover": {"phase": "FailingBack", "failback": {"back": 2, "of": 4}},
                       "lastAppliedRevision": "0123456789abcdef0123",
                       "lastAppliedTime": "2026-11-26T11:50:00Z", "message": message}}


ROWS = [status_row("search-api"), status_row("search-indexer-with-a-long-name", "short")]
LOST = {"usw2-general-01": {"phase": "Lost", "since": "2026-11-26T11:00:00Z",
                            "reason": "no answer for 5m0s: " + "connection refused " * 8}}


def test_the_old_rows_were_longer_than_any_terminal() -> None:
    wide = render_table(ROWS, render_clusters(LOST)).splitlines()
    assert max(len(line) for line in wide) > 260
    assert MESSAGE in wide[1]  # -o wide: everything, in full
    assert ("connection refused " * 8).strip() in "\n".join(wide)


@pytest.mark.parametrize("width", [80, 200])
def test_status_fits_the_width_cutting_the_message_with_an_ellipsis(width: int) -> None:
    text = render_table(ROWS, render_clusters(LOST, width), width=width)
    lines = text.splitlines()
    # an app's name is never cut: at 80 columns the 55-character one leaves its row (and
    # the header's) longer, every other column cut to its floor first
    long_name = "PinterestService/search/search-indexer-with-a-long-name"
    apps, clusters = text.split("\n\n")
    assert all(len(line) <= width for line in clusters.splitlines()), text
    assert lines[2].startswith(long_name + " ")
    if width == 80:
        assert lines[1].split()[-1] == "Deploym…" and len(lines[1]) < width + 10
    else:
        assert all(len(line) <= width for line in apps.splitlines()), text
    header = lines[0].split()
    assert header[:3] == ["APP", "PHASE", "READY"] and header[-1] == "MESSAGE"
    assert lines[1].endswith("…") and "CrashLoopBackOff" not in lines[1][-3:]
    assert lines[1].startswith("PinterestService/search/search-api ")
    assert "Degraded" in lines[1] and "17/18" in lines[1]
    assert lines[2].rstrip().endswith("short")  # a short message is whole
    assert any(line.startswith("usw2-general-01") for line in lines)
    if width == 200:  # room for more: the columns 80 leaves out come back
        assert {"ROLLOUT", "FAILOVER", "AGE"} <= set(header)


def test_at_80_columns_the_least_needed_columns_go_first() -> None:
    header = render_table(ROWS, width=80).splitlines()[0].split()
    assert "APPLIED" not in header and "REVISION" not in header
    assert header[:3] == ["APP", "PHASE", "READY"]


def test_a_column_empty_in_every_row_goes_before_a_full_one() -> None:
    table = [["APP", "ROLLOUT", "FAILOVER", "MESSAGE"],
             ["PinApp/shop/web", "Halted use1b", "-", "x" * 100]]
    lines = columns(table, width=60, drop=("ROLLOUT", "FAILOVER"))
    assert lines[0].split() == ["APP", "ROLLOUT", "MESSAGE"]
    assert all(len(line) <= 60 for line in lines)


def test_json_yaml_and_name_are_not_tables() -> None:
    assert render(ROWS, "name").splitlines() == [
        "PinterestService/search/search-api",
        "PinterestService/search/search-indexer-with-a-long-name"]
    assert MESSAGE in render(ROWS, "json", 80)


def test_the_width_is_the_terminal_s_or_columns_and_none_for_wide(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "123")
    assert table_width("table") == 123
    assert table_width("wide") is None and table_width("json") is None
    monkeypatch.delenv("COLUMNS")
    # pytest's stdout is not a terminal: a pipe or a file gets whole lines
    assert table_width("table") is None


def test_when_nothing_else_is_left_any_column_is_cut_and_then_the_line() -> None:
    table = [["APP", "MESSAGE"], ["PinApp/" + "p" * 60 + "/" + "n" * 60, "boom"]]
    lines = columns(table, width=40)
    assert all(len(line) <= 40 for line in lines)
    assert lines[1].split()[0].endswith("…") and lines[1].endswith("boom")
    assert all(len(line) <= 12 for line in columns(table, width=12))


def test_cells_are_cut_widest_first_down_to_a_floor() -> None:
    table = [["A", "B", "C"], ["a" * 50, "b" * 50, "c" * 10]]
    [_, row] = columns(table, width=60, truncate=("A", "B"))
    a, b, c = row.split()
    assert len(row) <= 60 and c == "c" * 10
    assert a.endswith("…") and b.endswith("…") and abs(len(a) - len(b)) <= 1
