"""`status`, `get apps` and the API show one app model: the same apps (PinScalers too),
the same documents in the same list envelope, AGE filled, the same filters (repeatable,
any case); a filter that matches nothing says why, and one naming nothing that exists
is a usage error with what was meant."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pincompile.cli import cli
from reconciler import host
from reconciler.api.access import RateLimits
from reconciler.api.app import Gateway, create_app
from reconciler.commands.status import render
from reconciler.store import Store
from tests.support.api_fakes import Statuses, TablePolicy
from tests.support.served_api import served

WRITTEN = "2026-11-26T09:00:00Z"


def status(phase: str, cluster: str) -> dict[str, Any]:
    return {"phase": phase, "ready": "2/2", "replicas": 2, "readyReplicas": 2,
            "clusters": [{"name": cluster, "phase": phase, "replicas": 2,
                          "readyReplicas": 2}],
            "observedRevision": "c0ffee", "lastAppliedRevision": "c0ffee",
            "lastAppliedTime": WRITTEN, "message": "" if phase == "Healthy" else "why",
            "rollout": {"phase": "Complete"}, "conditions": [{"type": "Ready"}]}


STATUSES = {("PinApp", "search", "search-api"): status("Healthy", "use1a-general-01"),
            ("PinScaler", "search", "search-api"): status("Healthy", "use1a-general-01"),
            ("PinterestService", "ads", "ads-serving"): status("Degraded", "usw2a-general-01")}
ROWS = [{"kind": k, "project": p, "name": n, "statusTime": WRITTEN, "status": s}
        for (k, p, n), s in sorted(STATUSES.items())]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[dict[str, str]]:
    grants = {("me", verb, kind, project) for verb in ("list", "read")
              for kind, project, _ in STATUSES}
    store = Store.open(f"sqlite:///{tmp_path / 'insight.db'}")
    as_host_keeps = {key: {**s, "statusTime": WRITTEN} for key, s in STATUSES.items()}
    gateway = Gateway(apps=Statuses(as_host_keeps), store=store,
                      access=TablePolicy({"t": "me"}, grants), limits=RateLimits(1000, 1000))
    with served(create_app(gateway)) as url:
        yield {"PINCOMPILE_SERVER": url, "PINCOMPILE_TOKEN": "t"}
    store.close()


def get_apps(env: dict[str, str], *args: str) -> Any:
    return CliRunner().invoke(cli, ["get", "apps", *args], env=env)


def test_status_and_get_apps_print_the_same_document_for_the_same_apps(
        server: dict[str, str]) -> None:
    listed = get_apps(server, "-o", "json")
    assert listed.exit_code == 0, listed.output
    document = json.loads(listed.stdout)
    assert document == json.loads(render(ROWS, "json"))
    assert (document["apiVersion"], document["kind"]) == ("pincompute.io/v1", "AppList")
    assert [(i["kind"], i["statusTime"]) for i in document["items"]] == [
        ("PinApp", WRITTEN), ("PinScaler", WRITTEN), ("PinterestService", WRITTEN)]
    table = get_apps(server).stdout.splitlines()
    assert table[0].split()[-2:] == ["AGE", "MESSAGE"]
    assert all(line.split()[-1] != "-" for line in table[1:3])  # AGE is filled


def test_the_status_of_the_host_includes_the_pinscalers(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    asked: list[str] = []

    def read_apps(_conn: Any, kinds: Any) -> dict[Any, Any]:
        asked.extend(k.kind for k in kinds)
        return {}

    monkeypatch.setattr(host, "read_apps", read_apps)
    assert host.read_rows(None) == []  # type: ignore[arg-type]
    assert "PinScaler" in asked and "PinApp" in asked


def test_filters_repeat_and_take_any_case(server: dict[str, str]) -> None:
    both = get_apps(server, "-p", "search", "-p", "ads", "-k", "pinapp", "-k",
                    "PINTERESTSERVICE", "-o", "name")
    assert both.stdout.splitlines() == ["PinApp/search/search-api",
                                        "PinterestService/ads/ads-serving"]
    degraded = get_apps(server, "--phase", "degraded", "--cluster", "usw2a-general-01",
                        "-o", "name")
    assert degraded.stdout == "PinterestService/ads/ads-serving\n"


@pytest.mark.parametrize(("args", "said"), [
    (["-p", "serch"], "no app has project 'serch' (did you mean search?); projects: ads, "
                      "search"),
    (["--cluster", "use1a-general-1"], "no app has cluster 'use1a-general-1' (did you mean "
                                       "use1a-general-01?)"),
    (["-k", "PinAp"], "no app kind 'PinAp' (did you mean PinApp?)"),
    (["--phase", "degarded"], "no phase 'degarded' (did you mean Degraded?)"),
])
def test_a_filter_naming_nothing_there_is_a_usage_error_with_what_was_meant(
        server: dict[str, str], args: list[str], said: str) -> None:
    done = get_apps(server, *args)
    assert done.exit_code == 2, done.output
    assert said in done.stderr and done.stdout == ""


def test_a_filter_that_matches_nothing_says_so_on_stderr(server: dict[str, str]) -> None:
    done = get_apps(server, "-p", "search", "--phase", "Failed")
    assert (done.exit_code, done.stdout) == (0, "")
    assert done.stderr == "no apps match -p search --phase Failed; phases there: Healthy\n"


def test_an_app_not_there_is_not_found_with_the_closest_one(server: dict[str, str]) -> None:
    done = CliRunner().invoke(cli, ["get", "apps", "PinApp/search/serch-api"],
                                             env=server)
    assert done.exit_code == 1
    assert "did you mean PinApp/search/search-api?" in done.stderr


def test_without_server_a_selector_matching_nothing_says_so_as_the_api_does(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from pincompile.selector import Targets
    from reconciler.commands import status as status_command
    from reconciler.commands.filters import AppFilter

    labelled = {key: {"metadata": {"labels": {"tier": "backend"}}} for key in STATUSES}

    def read_rows(_conn: Any, keep: Any = None) -> list[dict[str, Any]]:
        return [row for row in ROWS if keep is None or keep(
            (row["kind"], row["project"], row["name"]),
            labelled[(row["kind"], row["project"], row["name"])])]

    monkeypatch.setattr(status_command, "read_rows", read_rows)
    chosen = AppFilter(projects=("search",), selector="tier=frontend")
    shown, _, _, empty = status_command.read_host_apps(
        None, Targets([], None, "tier=frontend"), chosen)  # type: ignore[arg-type]
    assert (shown, empty) == ([], "no apps match -p search -l 'tier=frontend'")
