"""Every container of a pod is visible: a pod like the platform makes for search-api (two
native sidecars, one init container and the app's own container) counts READY as kubectl
does, lists every container with what it is, and logs and exec reach each of them, from
the whole pod and from what the pods watch keeps of it."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.api.exec_protocol import ExecQuery, NotFound, pick_target
from reconciler.api.logs import LogQuery, log_targets
from reconciler.api.models import PodList
from reconciler.api.pods import lean_pod, pod_summary


def running(name: str, ready: bool = True) -> dict[str, Any]:
    return {"name": name, "image": f"{name}:1", "ready": ready, "restartCount": 0,
            "started": True, "state": {"running": {"startedAt": "2026-11-26T09:00:00Z"}}}


def search_api_pod(main_ready: bool = True) -> dict[str, Any]:
    init = [{"name": "traffic", "image": "traffic:1", "restartPolicy": "Always"},
            {"name": "config-sync", "image": "config-sync:1"},
            {"name": "logging", "image": "logging:1", "restartPolicy": "Always"}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "search-api-7897545c98-64gqz", "namespace": "search",
                         "creationTimestamp": "2026-11-26T09:00:00Z", "managedFields": [{}]},
            "spec": {"nodeName": "use1a-node-2", "initContainers": init,
                     "containers": [{"name": "main", "image": "api:1.4.2"}]},
            "status": {"phase": "Running",
                       "initContainerStatuses": [
                           running("traffic"),
                           {"name": "config-sync", "image": "config-sync:1", "ready": False,
                            "restartCount": 1,
                            "state": {"terminated": {"reason": "Completed", "exitCode": 0}}},
                           running("logging")],
                       "containerStatuses": [running("main", main_ready)]}}


@pytest.mark.parametrize("keep", [lambda p: p, lean_pod], ids=["whole", "lean"])
def test_ready_counts_the_sidecars_as_kubectl_and_every_container_is_listed(keep: Any) -> None:
    summary = pod_summary("use1a", keep(search_api_pod()))
    assert summary.ready == "3/3" and summary.restarts == 1
    assert [(c.name, c.type, c.state) for c in summary.containers] == [
        ("main", "container", "Running"), ("traffic", "sidecar", "Running"),
        ("config-sync", "init", "Terminated"), ("logging", "sidecar", "Running")]
    assert pod_summary("use1a", keep(search_api_pod(main_ready=False))).ready == "2/3"


def test_logs_read_the_apps_own_containers_all_of_them_or_any_one_named() -> None:
    pods = PodList(items=[pod_summary("use1a", lean_pod(search_api_pod()))])
    assert [t.container for t in log_targets(pods, LogQuery(), 30)] == ["main"]
    assert [t.container for t in log_targets(pods, LogQuery(all_containers=True), 30)] == \
        ["main", "traffic", "config-sync", "logging"]
    for name in ("traffic", "config-sync"):
        assert [t.container for t in log_targets(pods, LogQuery(container=name), 30)] == [name]


def test_exec_runs_in_the_apps_container_by_default_and_in_a_sidecar_named() -> None:
    pods = PodList(items=[pod_summary("use1a", lean_pod(search_api_pod()))])
    assert pick_target(pods, ExecQuery(("true",))).container == "main"
    assert pick_target(pods, ExecQuery(("true",), container="traffic")).container == "traffic"
    with pytest.raises(NotFound, match="config-sync is an init container that has ended "
                                       r"\(Completed\)"):
        pick_target(pods, ExecQuery(("true",), container="config-sync"))
    with pytest.raises(NotFound, match="they have: config-sync, logging, main, traffic"):
        pick_target(pods, ExecQuery(("true",), container="trafic"))
