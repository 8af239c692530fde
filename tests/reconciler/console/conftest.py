"""A console on the API's app with a table of tokens and grants (the host's TokenReview and
SubjectAccessReview are exercised against a real API server in test_browser_e2e.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from reconciler.api.access import RateLimits
from reconciler.api.app import Gateway, create_app
from reconciler.api.models import PodList
from reconciler.api.pods import pod_summary
from reconciler.clients.connect import Connection
from reconciler.console.members import MemberHealth
from reconciler.console.routes import mount_console
from reconciler.store import Store
from tests.support.api_fakes import Statuses, TablePolicy


def status(phase: str, **clusters: str) -> dict[str, Any]:
    """An app's status with ``cluster=phase`` entries, two replicas in each."""
    return {"phase": phase, "ready": f"{2 * len(clusters)}/{2 * len(clusters)}",
            "clusters": [{"name": c, "phase": p, "replicas": 2, "readyReplicas": 2}
                         for c, p in clusters.items()],
            "lastAppliedRevision": "0123456789abcdef"}


def fleet_statuses() -> dict[tuple[str, str, str], Mapping[str, Any]]:
    apps: dict[tuple[str, str, str], Mapping[str, Any]] = {
        ("PinApp", "shop", f"web-{i:03}"): status("Healthy", east="Healthy", west="Healthy")
        for i in range(120)}
    apps[("PinApp", "shop", "cart")] = {
        **status("Degraded", east="Healthy", west="Degraded"),
        "message": "Deployment/shop/cart in west: <script>alert(1)</script>",
        "rollout": {"phase": "Halted", "message": "zone b unhealthy",
                    "zones": ["a", "b", "c"], "zoneIndex": 1}}
    apps[("PinterestService", "shop", "api")] = status("Progressing", central="Progressing")
    apps[("PinApp", "ads", "secret")] = status("Healthy", east="Healthy")
    apps[("PinScaler", "shop", "search")] = {**status("Healthy", east="Healthy"), "floor": 2}
    return apps


def pod(name: str, node: str, *, restarts: int = 0, last: str = "",
        waiting: str = "") -> dict[str, Any]:
    """A pod object of one container ``main`` as a kubelet reports it."""
    state = {"waiting": {"reason": waiting}} if waiting else {"running": {}}
    reported: dict[str, Any] = {"name": "main", "ready": not waiting, "restartCount": restarts,
                                "state": state}
    if last:
        reported["lastState"] = {"terminated": {"reason": last, "exitCode": 137}}
    return {"metadata": {"name": name, "namespace": "shop"},
            "spec": {"nodeName": node, "containers": [{"name": "main", "image": "cart:1"}]},
            "status": {"phase": "Running", "containerStatuses": [reported]}}


class FixedPods:
    """The member clusters' pods of app shop/cart, fixed; no member can be connected to
    (so a log stream says why in its one line)."""

    def pods(self, app: tuple[str, str, str], clusters: Any) -> PodList:
        if app != ("PinApp", "shop", "cart"):
            return PodList(items=[])
        return PodList(items=[
            pod_summary("east", pod("cart-7d4-a", "east-n1")),
            pod_summary("west", pod("cart-7d4-b", "west-n2", restarts=4, last="OOMKilled",
                                    waiting="CrashLoopBackOff"))],
            unreadable=[{"cluster": "central", "message": "not read yet"}])

    def connection(self, cluster: str) -> Connection | None:
        return None


MEMBERS = [
    MemberHealth("central", None),
    MemberHealth("east", True, nodes_ready=3, nodes=4),
    MemberHealth("west", False, problem="connection refused", failover="Lost",
                 failover_reason="unreachable for 310s (grace 300s): connection refused",
                 since="2026-11-01T12:00:00Z")]


class FixedMembers:
    def health(self) -> list[MemberHealth]:
        return MEMBERS


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store.open(f"sqlite:///{tmp_path / 'insight.db'}")
    yield opened
    opened.close()


@pytest.fixture
def console(store: Store) -> TestClient:
    grants = {(user, action, kind, "shop") for user in ("alice", "bob")
              for action in ("list", "read")
              for kind in ("PinApp", "PinterestService", "PinScaler")}
    grants.add(("alice", "logs", "PinApp", "shop"))  # bob may not read logs
    gateway = Gateway(apps=Statuses(fleet_statuses()), store=store,
                      access=TablePolicy({"alice-token": "alice", "bob-token": "bob",
                                          "dave-token": "dave"}, grants),
                      limits=RateLimits(qps=1000, burst=1000), pods=FixedPods())
    app = create_app(gateway)
    mount_console(app, members=FixedMembers(),
                  repo="https://deploy:s3cret@git.example.com/platform/specs.git")
    return TestClient(app, base_url="https://console.test", follow_redirects=False)


def csrf(client: TestClient, path: str = "/login") -> str:
    """The CSRF value of a page's forms (the page also sets its cookie)."""
    found = re.search(r'name="csrf" value="([^"]+)"', client.get(path).text)
    assert found, "the page has no CSRF field"
    return found.group(1)


def logged_in(client: TestClient, token: str = "alice-token") -> TestClient:
    answer = client.post("/login", data={"token": token, "csrf": csrf(client), "next": "/"})
    assert answer.status_code == 303, answer.text
    return client
