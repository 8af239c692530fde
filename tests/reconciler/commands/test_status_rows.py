"""What ``pincompile status`` shows: the age of each row, a table that fits the terminal,
and ``--live`` statuses computed from member objects with the health rules."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from pincompile.manifest import LABEL_APP, LABEL_KIND, LABEL_PROJECT
from reconciler.commands.status import render_table
from reconciler.commands.tables import age
from reconciler.host import status_time
from reconciler.status.live import live_rows

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(("seconds", "shown"), [
    (0, "0s"), (45, "45s"), (119, "119s"), (192, "3m12s"), (300, "5m"), (17 * 60, "17m"),
    (5 * 3600 + 40 * 60, "5h40m"), (30 * 3600, "30h"), (2 * 86400 + 3 * 3600, "2d3h"),
    (40 * 86400, "40d"),
])
def test_age_reads_like_kubectl(seconds: int, shown: str) -> None:
    stamp = datetime.fromtimestamp(NOW - seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert age(stamp, now=NOW) == shown


def test_age_of_nothing_or_garbage_is_a_dash() -> None:
    assert age(None) == "-" and age("yesterday") == "-"


def test_status_time_is_the_newest_write_of_the_status_subresource() -> None:
    cr = {"metadata": {"managedFields": [
        {"manager": "pincompile", "operation": "Apply", "time": "2026-11-26T10:00:00Z"},
        {"manager": "pincompile", "operation": "Apply", "subresource": "status",
         "time": "2026-11-26T11:00:00Z"},
        {"manager": "other", "operation": "Update", "subresource": "status",
         "time": "2026-11-26T11:30:00Z"}]}}
    assert status_time(cr) == "2026-11-26T11:30:00Z"
    assert status_time({"metadata": {}}) is None


def _row(message: str = "", **status: Any) -> dict[str, Any]:
    return {"kind": "PinApp", "project": "shop", "name": "web",
            "statusTime": "2026-11-26T11:57:00Z",
            "status": {"phase": "Healthy", "ready": "3/3", "message": message, **status}}


def test_the_table_has_an_age_column_and_fits_a_width() -> None:
    lines = render_table([_row("x" * 150)]).splitlines()
    header = lines[0].split()
    assert header[-2:] == ["AGE", "MESSAGE"]
    assert lines[1].split()[header.index("AGE")] != "-"
    assert len(lines[1]) > 150
    narrow = render_table([_row("x" * 150)], width=100).splitlines()
    assert all(len(line) <= 100 for line in narrow) and narrow[1].endswith("…")


# --- --live -------------------------------------------------------------------------------

def _deployment(ready: int, replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "generation": 2, "labels": {
                LABEL_APP: "web", LABEL_KIND: "PinApp", LABEL_PROJECT: "shop"}},
            "spec": {"replicas": replicas},
            "status": {"observedGeneration": 2, "replicas": replicas,
                       "updatedReplicas": replicas, "readyReplicas": ready,
                       "availableReplicas": ready,
                       "conditions": [{"type": "Available", "status": "True"}]}}


def _stored() -> dict[str, Any]:
    return {"phase": "Progressing", "ready": "0/4", "observedRevision": "abc123",
            "rollout": {"phase": "Complete"},
            "clusters": [{"name": "a", "phase": "Progressing"},
                         {"name": "b", "phase": "Progressing"},
                         {"name": "c", "phase": "Progressing"}]}


def test_live_rows_follow_the_member_objects_not_the_record() -> None:
    key = ("apps/v1/Deployment", "shop", "web")
    found = {"a": {key: _deployment(2, 2)}, "b": {key: _deployment(2, 2)}, "c": {}}
    row = {**_row(), "status": _stored()}
    [live] = live_rows([row], found, now=NOW)
    st = live["status"]
    assert live["statusTime"] == "2026-11-26T12:00:00Z"
    assert st["ready"] == "4/4" and st["observedRevision"] == "abc123"
    assert st["rollout"] == {"phase": "Complete"}  # only a pass knows: kept
    by_cluster = {c["name"]: c for c in st["clusters"]}
    assert by_cluster["a"]["phase"] == "Healthy"
    # the record says the app runs in c, where none of its objects are left
    assert by_cluster["c"]["phase"] == "Missing"
    assert st["phase"] == "Missing" and "PinApp/shop/web in c" in st["message"]


def test_a_cluster_that_cannot_be_read_is_unknown_and_the_others_still_count() -> None:
    key = ("apps/v1/Deployment", "shop", "web")
    found = {"a": {key: _deployment(1, 2)}, "b": "connection refused", "c": {}}
    stored = _stored()
    stored["clusters"] = stored["clusters"][:2]
    [live] = live_rows([{**_row(), "status": stored}], found, now=NOW)
    by_cluster = {c["name"]: c for c in live["status"]["clusters"]}
    assert by_cluster["a"]["readyReplicas"] == 1 and by_cluster["a"]["replicas"] == 2
    assert by_cluster["b"]["phase"] == "Unknown"
    assert "connection refused" in by_cluster["b"]["message"]


def test_cluster_rows_pass_through_live() -> None:
    row = {"kind": "Cluster", "project": "", "name": "c", "status": {"failover": {}}}
    assert live_rows([row], {}) == [row]
