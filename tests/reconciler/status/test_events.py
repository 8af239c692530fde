"""Repeated Events counted on the last one, as Kubernetes counts them: a long-running
reconciler repairing the same drift twice keeps one Event of it, counted twice."""

from __future__ import annotations

from pathlib import Path

from pincompile.compiler import compile_path
from reconciler import host
from reconciler.engine import Reconciler
from reconciler.model import Obj
from reconciler.status.events import EventLog
from tests.support.fake_passes import SUNDAY, FakePass, clusters_running, fake_fleet, spec_repo
from tests.support.kube_fake import FakeAccess, FakeCluster

WEB = ("PinApp", "shop", "web")


def events_of(cluster: FakeCluster, name: str = "web") -> list[Obj]:
    return [o for k, o in sorted(cluster.objects.items())
            if k[0] == "Event" and o["involvedObject"]["name"] == name]


def test_the_same_event_again_is_counted_on_the_last_and_another_is_added() -> None:
    cluster = FakeCluster("host")
    cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
    access, log = FakeAccess("host", cluster), EventLog()
    host.record_event(access, WEB, "Applied", "revision a: rt-a: update Service/shop/web",
                      log=log)
    host.record_event(access, WEB, "Applied", "revision a: rt-a: update Service/shop/web",
                      log=log)
    (counted,) = events_of(cluster)
    assert counted["count"] == 2 and counted["reason"] == "Applied"
    assert counted["firstTimestamp"] <= counted["lastTimestamp"]
    host.record_event(access, WEB, "Applied", "revision b: rt-a: update Service/shop/web",
                      log=log)
    host.record_event(access, WEB, "Applied", "revision b: rt-a: update Service/shop/web")
    assert sorted(e["count"] for e in events_of(cluster)) == [1, 1, 2]  # no log: added


def test_a_reconciler_repairing_the_same_drift_twice_keeps_one_event_counted_twice(
        tmp_path: Path) -> None:
    repo = spec_repo(tmp_path / "repo")
    fleet = fake_fleet(compile_path(repo))
    assert FakePass(fleet, repo).report.ok
    cluster = clusters_running(fleet, "web")[0]
    service = {"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "web", "namespace": "shop"}}
    before = len(events_of(fleet.clusters["host"]))
    reconciler = Reconciler(None, clock=lambda: SUNDAY, connect=fleet.connect)
    try:
        for _ in range(2):
            fleet.clusters[cluster].patch(service, {"spec": {"ports": [
                {"name": "http", "port": 80, "targetPort": 9999}]}}, manager="kubectl-edit")
            run = FakePass(fleet, repo, reconciler=reconciler)
            assert [str(r) for r in run.report.clusters[cluster].updated] == [
                "Service/shop/web"], run.lines
    finally:
        reconciler.close()
    repaired = [e for e in events_of(fleet.clusters["host"])
                if f"{cluster}: update Service/shop/web" in e["message"]]
    assert [(e["reason"], e["count"]) for e in repaired] == [("Applied", 2)], repaired
    assert len(events_of(fleet.clusters["host"])) == before + 1
