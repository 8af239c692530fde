"""Each pod's own log: files per container from the pod's start, a kwok ``Logs`` object
naming them, a line per running pod at a time, rotation, and nothing left once the pod
is gone."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Any

import pytest

from reconciler.fleet import debugging, pod_logs
from reconciler.fleet.pod_logs import PodLogs, create_logs, log_line

NOW = dt.datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=dt.UTC)


def pod(name: str, uid: str = "u1", phase: str = "Running", ns: str = "shop") -> dict[str, Any]:
    return {"metadata": {"namespace": ns, "name": name, "uid": uid},
            "spec": {"initContainers": [{"name": "init"}],
                     "containers": [{"name": "main"}, {"name": "proxy"}]},
            "status": {"phase": phase}}


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


@pytest.fixture
def gone() -> list[tuple[str, str]]:
    """The pods whose sessions the fleet was told to end."""
    return []


@pytest.fixture
def logs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         gone: list[tuple[str, str]]) -> PodLogs:
    monkeypatch.setattr(pod_logs, "SETTLE_SECONDS", 0.0)
    return PodLogs("c1", tmp_path, api=lambda: None, on_gone=lambda *key: gone.append(key))


def test_each_pod_gets_its_own_files_and_logs_object(logs: PodLogs, tmp_path: Path) -> None:
    created: list[str] = []
    logs.seen(pod("web-0"), lambda p: created.append(p.name))
    logs.seen(pod("web-1", uid="u2"), lambda p: created.append(p.name))
    logs.seen(pod("web-0", phase="Running"), lambda p: created.append(p.name))  # a change
    assert created == ["web-0", "web-1"] and logs.ready("shop", "web-0")
    assert not logs.ready("shop", "web-2")
    assert logs.write(NOW) == 6  # two pods, three containers each
    logs.write(NOW)
    web0 = debugging.log_file(tmp_path, "c1", "shop", "web-0", "main")
    web1 = debugging.log_file(tmp_path, "c1", "shop", "web-1", "main")
    assert web0 != web1 and lines(web0) == lines(web1) == [
        "2026-01-02T03:04:05.123456000Z stdout F pincompile fleet: pod log line 1",
        "2026-01-02T03:04:05.123456000Z stdout F pincompile fleet: pod log line 2"]
    # what is appended to one pod's log shows in no other's
    with open(web0, "a") as out:
        out.write(log_line(99, NOW))
    assert "line 99" in web0.read_text() and "line 99" not in web1.read_text()


def test_only_running_pods_get_lines_and_a_new_pod_of_the_same_name_starts_afresh(
        logs: PodLogs, tmp_path: Path) -> None:
    logs.seen(pod("job-0", phase="Pending"), lambda p: None)
    assert logs.write(NOW) == 0
    logs.seen(pod("job-0", phase="Running"), lambda p: None)
    logs.write(NOW)
    main = debugging.log_file(tmp_path, "c1", "shop", "job-0", "main")
    assert len(lines(main)) == 1
    logs.seen(pod("job-0", phase="Succeeded"), lambda p: None)
    assert logs.write(NOW) == 0 and len(lines(main)) == 1  # a finished pod keeps its log
    recreated: list[str] = []
    logs.seen(pod("job-0", uid="u9"), lambda p: recreated.append(p.uid))
    assert recreated == ["u9"] and lines(main) == []


def test_a_deleted_pod_leaves_nothing_and_ends_its_sessions(
        logs: PodLogs, tmp_path: Path, gone: list[tuple[str, str]]) -> None:
    logs.seen(pod("web-0"), lambda p: None)
    logs.seen(pod("web-1", uid="u2"), lambda p: None)
    logs.sync([pod("web-1", uid="u2")], lambda p: None)  # a relist without web-0
    assert not debugging.pod_dir(tmp_path, "c1", "shop", "web-0").exists()
    assert gone == [("shop", "web-0")]
    assert logs.write(NOW) == 3


def test_a_full_log_is_rotated(logs: PodLogs, tmp_path: Path,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pod_logs, "LOG_LIMIT", 200)
    logs.seen(pod("web-0"), lambda p: None)
    for _ in range(5):
        logs.write(NOW)
    main = debugging.log_file(tmp_path, "c1", "shop", "web-0", "main")
    previous = main.with_name("main.log.1")
    assert previous.exists() and main.stat().st_size <= 200
    assert [line[-1] for line in lines(previous) + lines(main)] == list("12345")


def test_a_pods_log_is_served_only_after_kwok_had_time_to_see_its_logs_object(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pod_logs, "SETTLE_SECONDS", 0.3)
    logs = PodLogs("c1", tmp_path, api=lambda: None)
    logs.seen(pod("web-0"), lambda p: None)
    assert not logs.ready("shop", "web-0")
    time.sleep(pod_logs.SETTLE_SECONDS)
    assert logs.ready("shop", "web-0")


class FakeCustom:
    """The CustomObjectsApi calls create_logs makes."""

    def __init__(self, existing: dict[str, Any] | None = None) -> None:
        self.objects = {existing["metadata"]["name"]: existing} if existing else {}

    def create_namespaced_custom_object(self, group: str, version: str, ns: str, plural: str,
                                        body: dict[str, Any]) -> None:
        from kubernetes.client.rest import ApiException

        if body["metadata"]["name"] in self.objects:
            raise ApiException(status=409, reason="AlreadyExists")
        self.objects[body["metadata"]["name"]] = body

    def get_namespaced_custom_object(self, group: str, version: str, ns: str, plural: str,
                                     name: str) -> dict[str, Any]:
        return {**self.objects[name], "metadata": {**self.objects[name]["metadata"],
                                                   "resourceVersion": "7"}}

    def replace_namespaced_custom_object(self, group: str, version: str, ns: str,
                                         plural: str, name: str, body: dict[str, Any]) -> None:
        assert body["metadata"]["resourceVersion"] == "7"
        self.objects[name] = body


def test_the_logs_object_names_each_containers_file_and_is_owned_by_the_pod(
        tmp_path: Path) -> None:
    logs = PodLogs("c1", tmp_path, api=lambda: None)
    stale = debugging.logs_object(tmp_path, "c1", "shop", "web-0", "old-uid", ["main"])
    custom = FakeCustom(stale)  # a pod of the same name had one
    logs.seen(pod("web-0", uid="u1"), lambda p: create_logs(custom, logs, p))
    body = custom.objects["web-0"]
    assert body["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": "web-0", "uid": "u1"}]
    assert {(tuple(e["containers"]), e["logsFile"], e["follow"]) for e in body["spec"]["logs"]} == {
        ((c,), str(debugging.log_file(tmp_path, "c1", "shop", "web-0", c)), True)
        for c in ("init", "main", "proxy")}
