"""`get -w` prints the list again each time it changes (an age alone is no change), and
`events -w` prints each event as it comes, until Ctrl-C, which exits 0."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pincompile.cli import cli
from reconciler.api.access import RateLimits
from reconciler.api.app import Gateway, create_app
from reconciler.commands import get as get_module
from reconciler.commands import remote
from reconciler.store import EventRecord, Store
from tests.support.api_fakes import Statuses, TablePolicy
from tests.support.served_api import served

APP = ("PinApp", "shop", "web")


class Changing(Statuses):
    def change(self, status: dict[str, Any]) -> None:
        self._statuses = {APP: status}


def status(phase: str, written: str) -> dict[str, Any]:
    return {"phase": phase, "ready": "1/1", "statusTime": written,
            "clusters": [{"name": "east", "phase": phase}]}


@pytest.fixture
def served_apps(tmp_path: Path) -> Iterator[tuple[dict[str, str], Changing, Store]]:
    apps = Changing({APP: status("Healthy", "2026-11-26T09:00:00Z")})
    store = Store.open(f"sqlite:///{tmp_path / 'insight.db'}")
    gateway = Gateway(apps=apps, store=store, limits=RateLimits(1000, 1000),
                      access=TablePolicy({"t": "me"}, {("me", verb, "PinApp", "shop")
                                                       for verb in ("list", "read")}))
    with served(create_app(gateway)) as url:
        yield {"PINCOMPILE_SERVER": url, "PINCOMPILE_TOKEN": "t"}, apps, store
    store.close()


def ticks(monkeypatch: pytest.MonkeyPatch, module: Any, *changes: Any) -> None:
    """Each wait of the watch makes the next change; after the last, Ctrl-C."""
    pending = list(changes)

    def sleep(_seconds: float) -> None:
        if not pending:
            raise KeyboardInterrupt
        pending.pop(0)()

    monkeypatch.setattr(module.time, "sleep", sleep)


def test_get_w_prints_the_list_again_only_when_it_changed(
        served_apps: tuple[dict[str, str], Changing, Store],
        monkeypatch: pytest.MonkeyPatch) -> None:
    env, apps, _ = served_apps
    ticks(monkeypatch, get_module,
          lambda: apps.change(status("Healthy", "2026-11-26T09:05:00Z")),  # age only
          lambda: apps.change(status("Degraded", "2026-11-26T09:06:00Z")))
    done = CliRunner().invoke(cli, ["get", "apps", "-w", "-o", "name"], env=env)
    assert done.exit_code == 0, done.output
    lines = done.stdout.splitlines()
    assert lines[0] == "PinApp/shop/web" and lines[1].startswith("--- ") and len(lines) == 3
    table = CliRunner().invoke(cli, ["get", "apps", "-w"], env=env)
    assert "Degraded" in table.stdout


def test_events_w_prints_each_new_event_once(
        served_apps: tuple[dict[str, str], Changing, Store],
        monkeypatch: pytest.MonkeyPatch) -> None:
    env, _, store = served_apps

    def add(uid: str) -> None:
        store.add_events([EventRecord(app=APP, reason=f"R{uid}", message="m", uid=uid,
                                      last_seen=datetime(2026, 11, 26, 9, int(uid),
                                                         tzinfo=UTC))])

    add("1")
    ticks(monkeypatch, remote, lambda: None, lambda: add("2"))
    done = CliRunner().invoke(cli, ["events", "/".join(APP), "-w", "-o", "json"], env=env)
    assert done.exit_code == 0, done.output
    assert [json.loads(line)["reason"] for line in done.stdout.splitlines()] == ["R1", "R2"]
