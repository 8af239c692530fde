"""`pincompile describe` shows one app whole: its spec in short, where it runs and why the
other clusters were left out, its objects per member cluster with their health, its pods
with every container, its conditions, the rollout gate, its last events and revisions;
-o json is the same as one document; an app not there is exit 1 with the closest one."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from click.testing import CliRunner

from pincompile.cli import cli
from reconciler.api.access import RateLimits
from reconciler.api.app import Gateway, create_app
from reconciler.api.models import PodList
from reconciler.api.pods import pod_summary
from reconciler.api.timeline import ClustersTimeline
from reconciler.clients.connect import Connection
from reconciler.store import Store
from tests.reconciler.api.test_containers import search_api_pod
from tests.reconciler.api.test_timeline import HOST, MEMBER, labelled
from tests.support.api_fakes import Statuses, TablePolicy
from tests.support.fake_clusters import FakeCluster
from tests.support.served_api import served

APP = ("PinApp", "search", "search-api")
STATUS = {
    "phase": "Progressing", "ready": "3/4", "replicas": 4, "readyReplicas": 3,
    "message": "rollout at zone us-east-1b", "observedRevision": "a" * 40,
    "lastAppliedRevision": "a" * 40, "lastAppliedTime": "2026-11-26T09:00:00Z",
    "statusTime": "2026-11-26T09:01:00Z", "source": "apps/search/search-api.yaml",
    "clusters": [{"name": "use1a", "phase": "Healthy", "replicas": 2, "readyReplicas": 2},
                 {"name": "use1b", "phase": "Progressing", "replicas": 2, "readyReplicas": 1,
                  "message": "1 of 2 pods updated"}],
    "spec": {"replicas": 4, "tier": "reserved",
             "template": {"containers": [{"name": "main", "image": "api:1.4.3",
                                          "resources": {"cpu": "2", "memory": "4Gi"}}],
                          "sidecars": ["logging"]},
             "rollout": {"strategy": "zone-by-zone", "healthTimeout": "10m"}},
    "placement": {"clusters": [{"name": "use1a", "zone": "us-east-1a", "replicas": 2},
                               {"name": "use1b", "zone": "us-east-1b", "replicas": 2}],
                  "eligible": ["use1a", "use1b", "use1c"],
                  "filtered": {"usw2a": "regions: us-west-2 is not in [us-east-1]"}},
    "rollout": {"phase": "Progressing", "zones": ["us-east-1a", "us-east-1b", "us-east-1c"],
                "zoneIndex": 1, "zone": "us-east-1b", "since": "2026-11-26T09:00:00Z"},
    "conditions": [{"type": "Ready", "status": "False", "reason": "Progressing",
                    "lastTransitionTime": "2026-11-26T09:00:00Z", "message": "rolling"}],
    "history": [{"revision": "a" * 40, "appliedAt": "2026-11-26T09:00:00Z",
                 "result": "Progressing"},
                {"revision": "b" * 40, "appliedAt": "2026-11-25T09:00:00Z",
                 "result": "Healthy"}],
}
DEPLOYMENT = labelled("Deployment", "search-api", api_version="apps/v1")
DEPLOYMENT["metadata"]["generation"] = 1
DEPLOYMENT |= {"spec": {"replicas": 2},
              "status": {"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2,
                         "readyReplicas": 2, "availableReplicas": 2,
                         "conditions": [{"type": "Available", "status": "True"}]}}


class Pods:
    """The app's pods and the member clusters, as the API reads them."""

    def __init__(self, members: dict[str, FakeCluster]) -> None:
        self.members = members

    def pods(self, app: Any, clusters: Iterable[str]) -> PodList:
        return PodList(items=[pod_summary("use1a", search_api_pod())])

    def connection(self, cluster: str) -> Connection | None:
        return None

    def connect(self, clusters: Iterable[str]) -> dict[str, Any]:
        return {c: self.members.get(c, "no context") for c in clusters}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[dict[str, str]]:
    member = FakeCluster("use1a", [DEPLOYMENT, *(o for o in MEMBER.objects
                                                 if o["kind"] != "Deployment")])
    pods = Pods({"use1a": member})
    store = Store.open(f"sqlite:///{tmp_path / 'insight.db'}")
    gateway = Gateway(apps=Statuses({APP: STATUS}), store=store,
                      access=TablePolicy({"t": "me"}, {("me", verb, *APP[:2])
                                                        for verb in ("read", "list")}),
                      limits=RateLimits(1000, 1000), pods=pods, host=cast(Connection, HOST),
                      timeline=ClustersTimeline(cast(Connection, HOST), pods.connect),
                      store_read=False)
    with served(create_app(gateway)) as url:
        yield {"PINCOMPILE_SERVER": url, "PINCOMPILE_TOKEN": "t", "COLUMNS": "200"}
    store.close()


def sections(text: str) -> dict[str, str]:
    """The text view's sections by title (the header's under "")."""
    found: dict[str, list[str]] = {"": []}
    title = ""
    for line in text.splitlines():
        if line and not line.startswith(" ") and line.endswith(":"):
            title = line[:-1]
            found[title] = []
        else:
            found[title].append(line.strip())
    return {k: "\n".join(v) for k, v in found.items()}


def test_describe_shows_the_app_whole(server: dict[str, str]) -> None:
    done = CliRunner().invoke(cli, ["describe", "/".join(APP)], env=server)
    assert done.exit_code == 0, done.output
    shown = sections(done.stdout)
    assert "Name:           PinApp/search/search-api" in shown[""]
    assert "Source:         apps/search/search-api.yaml" in shown[""]
    assert "container main: api:1.4.3 (cpu 2, memory 4Gi)" in shown["Spec"]
    assert "sidecars asked for: logging" in shown["Spec"]
    placement = shown["Placement"].splitlines()
    assert placement[1].split()[:5] == ["use1a", "us-east-1a", "2", "2/2", "Healthy"]
    assert "eligible, not chosen: use1c" in shown["Placement"]
    assert "left out usw2a: regions: us-west-2 is not in [us-east-1]" in shown["Placement"]
    assert "us-east-1a done → us-east-1b now → us-east-1c next" in shown["Rollout"]
    assert ("gate: us-east-1c starts once every Deployment in us-east-1b has its new pods "
            "updated and available (within 10m, else the rollout halts)") in shown["Rollout"]
    objects = shown["Objects"].splitlines()
    assert objects[1].split()[:4] == ["use1a", "Deployment", "search-api", "Healthy"]
    assert "unreadable: use1b: no context" in shown["Objects"]
    assert "search-api-7897545c98-64gqz" in shown["Pods"] and " 3/3 " in shown["Pods"]
    assert "ScalingReplicaSet" in shown["Events (last 10)"]
    revisions = shown["Revisions (last 5)"].splitlines()
    assert [r.split()[1:3] for r in revisions[1:]] == [["a" * 12, "Progressing"],
                                                      ["b" * 12, "Healthy"]]


def test_describe_as_json_is_one_document_and_an_unknown_app_is_not_found(
        server: dict[str, str]) -> None:
    done = CliRunner().invoke(cli, ["describe", "/".join(APP), "-o", "json"], env=server)
    document = json.loads(done.stdout)
    assert list(document) == ["app", "objects", "pods", "events", "revisions"]
    assert document["app"]["placement"]["filtered"] == STATUS["placement"]["filtered"]
    assert document["pods"]["items"][0]["ready"] == "3/3"
    missing = CliRunner().invoke(cli, ["describe", "PinApp/search/search-apj"], env=server)
    assert missing.exit_code == 1
    assert "did you mean PinApp/search/search-api?" in missing.stderr


def test_get_pods_of_one_app_narrows_to_clusters(server: dict[str, str]) -> None:
    here = CliRunner().invoke(cli, ["get", "pods", "/".join(APP), "--cluster", "use1a",
                                    "-o", "name"], env=server)
    assert here.stdout == "use1a/search/search-api-7897545c98-64gqz\n"
    elsewhere = CliRunner().invoke(cli, ["get", "pods", "/".join(APP), "--cluster", "use1b"],
                                   env=server)
    assert (elsewhere.exit_code, elsewhere.stdout) == (0, "")
    assert elsewhere.stderr == "PinApp/search/search-api: no pods\n"


def test_only_a_training_job_is_looked_for_among_the_training_operators_kinds() -> None:
    from reconciler.api.objects import kinds_of

    assert not any(v.startswith("kubeflow.org/") for v, _ in kinds_of("PinApp"))
    assert {k for _, k in kinds_of("PinterestTrainingJob")} >= {"TFJob", "PyTorchJob"}
