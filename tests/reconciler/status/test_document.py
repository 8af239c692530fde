"""An app's status document from its clusters' views."""

from __future__ import annotations

from reconciler.status import document
from tests.support.deployments import deploy, live_of


def test_status_of_an_app_with_an_unreachable_cluster_and_a_halted_rollout() -> None:
    from reconciler.model import ObjectRef

    healthy = live_of(deploy("web:1"))
    healthy["status"]["readyReplicas"] = 2
    healthy["status"]["conditions"] = [{"type": "Available", "status": "True"}]
    views = [document.ClusterView("a1", [(ObjectRef("a1", "apps/v1", "Deployment",
                                                           "shop", "web"), healthy)]),
             document.ClusterView("b1", error="connection refused")]
    doc = document.app_status(views, revision="r1", rollout=None, previous=None,
                                     applied=True, now=0)
    assert doc["phase"] == "Unknown" and doc["ready"] == "2/2"
    assert doc["clusters"][1] == {"name": "b1", "phase": "Unknown",
                                  "message": "cluster unreachable: connection refused"}
    halted = document.app_status(
        views[:1], revision="r2", previous=doc, applied=False,
        rollout={"phase": "Halted", "message": "zone zb not healthy"})
    assert halted["phase"] == "Degraded" and "zone zb not healthy" in halted["message"]
    assert halted["lastAppliedRevision"] == "r1"  # nothing applied in this pass
    assert not document.changed(doc, {**doc, "lastAppliedTime": "later"})
    assert document.changed(doc, halted)


def test_history_keeps_the_last_revisions_newest_first_with_the_phase_each_ended_with(
        ) -> None:
    from reconciler.model import ObjectRef

    ready = live_of(deploy("web:1"))
    ready["status"].update(readyReplicas=2, conditions=[{"type": "Available",
                                                         "status": "True"}])
    starting = live_of(deploy("web:2"), ready=False)
    ref = ObjectRef("a1", "apps/v1", "Deployment", "shop", "web")
    doc = None
    for at, (revision, live) in enumerate([("r1", starting), ("r1", ready), ("r2", starting),
                                           ("r2", starting)]):
        doc = document.app_status([document.ClusterView("a1", [(ref, live)])],
                                  revision=revision, rollout=None, previous=doc,
                                  applied=True, now=1_800_000_000 + 60 * at)
    assert doc is not None
    assert doc["history"] == [
        {"revision": "r2", "appliedAt": "2027-01-15T08:02:00Z", "result": "Progressing"},
        {"revision": "r1", "appliedAt": "2027-01-15T08:00:00Z", "result": "Healthy"}]
    for n in range(3, 3 + document.HISTORY_LIMIT):
        doc = document.app_status([document.ClusterView("a1", [(ref, ready)])],
                                  revision=f"r{n}", rollout=None, previous=doc, applied=True)
    assert [e["revision"] for e in doc["history"]] == \
        [f"r{n}" for n in range(2 + document.HISTORY_LIMIT, 2, -1)]
