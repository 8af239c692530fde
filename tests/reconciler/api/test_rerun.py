"""A rerun's pure half: the copy created again is the object as pincompile applied it
(its record kept, what the API server generated left out), and an object that does not
go away is not created again."""

from __future__ import annotations

from typing import Any

from reconciler.api.rerun import fresh_copy, run_rerun, why_not_rerunnable
from reconciler.plan.applied import ANNOTATION


def live_job() -> dict[str, Any]:
    labels = {"pincompute.io/app": "index", "controller-uid": "u1", "job-name": "index-0",
              "batch.kubernetes.io/controller-uid": "u1",
              "batch.kubernetes.io/job-name": "index-0"}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": "index-0", "namespace": "search", "uid": "u1", "resourceVersion": "42",
        "generation": 1, "creationTimestamp": "2026-11-26T12:00:00Z",
        "managedFields": [{"manager": "pincompile"}], "labels": {"pincompute.io/app": "index"},
        "annotations": {ANNOTATION: "abc"}},
        "spec": {"completions": 5, "selector": {"matchLabels": {"controller-uid": "u1"}},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [{"name": "main", "image": "i:1"}]}}},
        "status": {"succeeded": 5}}


def test_the_copy_keeps_what_was_applied_and_drops_what_the_server_generated() -> None:
    copy = fresh_copy(live_job())
    assert copy["metadata"] == {"name": "index-0", "namespace": "search",
                                "labels": {"pincompute.io/app": "index"},
                                "annotations": {ANNOTATION: "abc"}}
    assert "status" not in copy and "selector" not in copy["spec"]
    assert copy["spec"]["template"]["metadata"]["labels"] == {"pincompute.io/app": "index"}
    assert copy["spec"]["completions"] == 5
    manual = live_job()
    manual["spec"]["manualSelector"] = True
    assert "selector" in fresh_copy(manual)["spec"]


def test_a_training_job_keeps_its_spec_and_only_loses_server_fields() -> None:
    tfjob = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
             "metadata": {"name": "ctr", "namespace": "ml", "uid": "u"},
             "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2}}}, "status": {}}
    assert fresh_copy(tfjob) == {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
                                 "metadata": {"name": "ctr", "namespace": "ml"},
                                 "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2}}}}


def test_an_object_that_does_not_go_away_is_not_created_again() -> None:
    created: list[str] = []
    reasons: list[str] = []
    done = run_rerun([("a", live_job()), ("b", live_job())],
                     delete=lambda cluster, _obj: cluster == "a",
                     create=lambda cluster, _obj: created.append(cluster),
                     record=lambda reason, _m: reasons.append(reason))
    assert created == ["a"] and done == ["a: Job/search/index-0"]
    assert reasons == ["RerunFailed", "RerunStarted"]


def test_only_run_to_completion_kinds_rerun() -> None:
    assert why_not_rerunnable("PinterestJobSet") is None
    assert why_not_rerunnable("PinterestTrainingJob") is None
    assert "restart" in str(why_not_rerunnable("PinApp"))
