"""`top` shows what an app's pods use now against what they request, from each member
cluster's metrics API: per pod, or per app and cluster; a pod not measured yet shows `-`,
a cluster without a metrics API is named."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from click.testing import CliRunner

from pincompile.cli import cli
from reconciler.api.access import RateLimits
from reconciler.api.app import Gateway, create_app
from reconciler.clients.connect import Connection
from reconciler.store import Store
from tests.reconciler.api.test_timeline import HOST, labelled
from tests.reconciler.commands.test_describe import Pods
from tests.support.api_fakes import Statuses, TablePolicy
from tests.support.fake_clusters import FakeCluster
from tests.support.served_api import served

APP = ("PinApp", "search", "search-api")
METRICS = "metrics.k8s.io/v1beta1"


def pod(name: str) -> dict[str, Any]:
    found = labelled("Pod", name)
    found["spec"] = {
        "containers": [{"name": "main", "resources": {"requests": {"cpu": "200m",
                                                                   "memory": "256Mi"}}}],
        "initContainers": [
            {"name": "traffic", "restartPolicy": "Always",
             "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}},
            {"name": "config-sync", "resources": {"requests": {"cpu": "1"}}}]}
    return found


def metrics(name: str) -> dict[str, Any]:
    found = labelled("PodMetrics", name, api_version=METRICS)
    found["containers"] = [{"name": "main", "usage": {"cpu": "60000000n", "memory": "100Mi"}},
                           {"name": "traffic", "usage": {"cpu": "30m", "memory": "50Mi"}}]
    return found


@pytest.fixture
def server(tmp_path: Path) -> Iterator[dict[str, str]]:
    measured = FakeCluster("use1a", [pod("web-a"), pod("web-b"), metrics("web-a")],
                           served=("v1", METRICS))
    plain = FakeCluster("use1b", [pod("web-c")], served=("v1",))
    pods = Pods({"use1a": measured, "use1b": plain})
    store = Store.open(f"sqlite:///{tmp_path / 'insight.db'}")
    status = {"phase": "Healthy", "ready": "3/3",
              "clusters": [{"name": "use1a", "phase": "Healthy"},
                           {"name": "use1b", "phase": "Healthy"}]}
    gateway = Gateway(apps=Statuses({APP: status}), store=store, pods=pods,
                      access=TablePolicy({"t": "me"}, {("me", verb, *APP[:2])
                                                       for verb in ("read", "list")}),
                      limits=RateLimits(1000, 1000), host=cast(Connection, HOST))
    with served(create_app(gateway)) as url:
        yield {"PINCOMPILE_SERVER": url, "PINCOMPILE_TOKEN": "t", "COLUMNS": "200"}
    store.close()


def test_top_pods_shows_use_against_requests_per_pod(server: dict[str, str]) -> None:
    done = CliRunner().invoke(cli, ["top", "pods", "/".join(APP)], env=server)
    assert done.exit_code == 0, done.output
    lines = [line.split() for line in done.stdout.splitlines()]
    assert lines[0] == ["CLUSTER", "POD", "CPU", "CPU/REQ", "MEMORY", "MEM/REQ"]
    # main and the traffic sidecar: 60m + 30m of 300m, 150Mi of 384Mi (no init container)
    assert lines[1] == ["use1a", "web-a", "90m", "30%", "150Mi", "39%"]
    assert lines[2] == ["use1a", "web-b", "-", "-", "-", "-"]  # not measured yet
    assert "unreadable: PinApp/search/search-api: use1b: no metrics API" in done.stdout


def test_top_apps_sums_per_cluster_and_json_has_every_pod(server: dict[str, str]) -> None:
    done = CliRunner().invoke(cli, ["top", "apps", "-p", "search"], env=server)
    assert done.stdout.splitlines()[1].split() == [
        "PinApp/search/search-api", "use1a", "2", "90m", "30%", "150Mi", "39%"]
    document = json.loads(CliRunner().invoke(cli, ["top", "pods", "/".join(APP), "-o",
                                                   "json"], env=server).stdout)
    assert [(u["name"], u["cpu"], u["cpuRequest"]) for u in document["items"]] == [
        ("web-a", 90, 300), ("web-b", 0, 300)]
