"""The reconciler's pure parts: request classification, retries, rate limit, diff
normalization, prune limits, rollout decisions and gates, status documents."""

from __future__ import annotations

import time
from typing import Any

import pytest

from reconciler import diff, rollout, status_document
from reconciler.clients.connect import (
    ClusterUnreachable,
    RequestStats,
    RetryPolicy,
    TokenBucket,
    _Hook,
    classify,
)
from reconciler.sync import prune_limit


@pytest.mark.parametrize(("method", "url", "want"), [
    ("GET", "https://h/apis/apps/v1/namespaces/shop/deployments?labelSelector=x",
     ("list", "deployments")),
    ("GET", "https://h/apis/apps/v1/namespaces/shop/deployments/web", ("get", "deployments")),
    ("GET", "https://h/api/v1/namespaces", ("list", "namespaces")),
    ("GET", "https://h/api/v1/namespaces/shop", ("get", "namespaces")),
    ("GET", "https://h/api/v1/pods?watch=true", ("watch", "pods")),
    ("PATCH", "https://h/apis/apps/v1/namespaces/s/deployments/w?dryRun=All&force=true",
     ("dry-run", "deployments")),
    ("PATCH", "https://h/apis/apps/v1/namespaces/s/deployments/w?fieldManager=pincompile",
     ("patch", "deployments")),
    ("DELETE", "https://h/apis/batch/v1/namespaces/s/jobs/j", ("delete", "jobs")),
    ("POST", "https://h/api/v1/namespaces/s/events", ("create", "events")),
    ("GET", "https://h/apis/apps/v1", ("discovery", "/apis/apps/v1")),
])
def test_requests_are_classified_like_the_audit_log(method: str, url: str,
                                                    want: tuple[str, str]) -> None:
    assert classify(method, url) == want


class Response:
    def __init__(self, status: int, retry_after: str | None = None) -> None:
        self.status, self.retry_after = status, retry_after

    def read(self) -> bytes:
        return b""

    def getheader(self, name: str, default: Any = None) -> Any:
        return self.retry_after if name == "Retry-After" else default


def test_429_and_5xx_are_retried_honouring_retry_after_and_counted() -> None:
    answers = [Response(429, "0.3"), Response(503), Response(200)]
    stats = RequestStats()
    hook = _Hook(lambda *a, **k: answers.pop(0), stats, TokenBucket(1000, 1000),
                 RetryPolicy(attempts=4, base=0.01, cap=0.02), (1, 1))
    started = time.monotonic()
    assert hook("GET", "https://h/api/v1/pods").status == 200
    assert time.monotonic() - started >= 0.3  # Retry-After wins over the back-off
    assert stats.by_verb["list"] == 3 and stats.writes == 0


def test_retries_give_up_and_a_dead_server_is_unreachable() -> None:
    def refuse(*_a: Any, **_k: Any) -> Any:
        raise ConnectionRefusedError("connection refused")

    hook = _Hook(refuse, RequestStats(), TokenBucket(1000, 1000),
                 RetryPolicy(attempts=3, base=0.001, cap=0.001), (1, 1))
    with pytest.raises(ClusterUnreachable, match="refused"):
        hook("GET", "https://h/api/v1/pods")
    answers = [Response(500)] * 3
    hook = _Hook(lambda *a, **k: answers.pop(0), RequestStats(), TokenBucket(1000, 1000),
                 RetryPolicy(attempts=3, base=0.001, cap=0.001), (1, 1))
    assert hook("PATCH", "https://h/api/v1/namespaces/s/pods/p").status == 500


def test_token_bucket_holds_the_rate_after_the_burst() -> None:
    bucket = TokenBucket(qps=50, burst=5)
    started = time.monotonic()
    for _ in range(15):
        bucket.take()
    assert time.monotonic() - started >= 0.18  # 10 requests past the burst at 50/s


def test_server_owned_fields_and_the_revision_never_count_as_drift() -> None:
    desired = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"}, "metadata": {
        "name": "c", "annotations": {"pincompute.io/revision": "new"}}}
    live = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"}, "metadata": {
        "name": "c", "uid": "u", "resourceVersion": "7", "creationTimestamp": "t",
        "managedFields": [{"manager": "pincompile"}],
        "annotations": {"pincompute.io/revision": "old"}}}
    assert diff.same(live, desired)
    changed = {**desired, "data": {"a": "2"}}
    assert not diff.same(live, changed)
    text = diff.unified(live, changed, "ConfigMap/c")
    assert "-  a: '1'" in text and "+  a: '2'" in text and "revision" not in text


@pytest.mark.parametrize(("limit", "managed", "want"),
                         [("20%", 100, 20), ("20%", 4, 0), ("5", 100, 5), ("100%", 7, 7)])
def test_prune_limit(limit: str, managed: int, want: int) -> None:
    assert prune_limit(limit, managed) == want


def deploy(image: str, timeout: str = "30s") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {
        "name": "web", "namespace": "shop", "annotations": {
            rollout.STRATEGY_ANNOTATION: "zone-by-zone",
            rollout.HEALTH_TIMEOUT_ANNOTATION: timeout}},
        "spec": {"replicas": 2, "template": {"spec": {"containers": [{"image": image}]}}}}


def live_of(obj: dict[str, Any], *, ready: bool = True, generation: int = 1) -> dict[str, Any]:
    out = rollout.stamp(obj)
    out["metadata"]["generation"] = generation
    n = 2 if ready else 0
    out["status"] = {"observedGeneration": generation, "replicas": 2, "updatedReplicas": 2,
                     "availableReplicas": n}
    return out


ZONES = {"a1": "za", "b1": "zb", "c1": "zc"}
APP = ("PinApp", "shop", "web")


def test_a_new_template_starts_at_the_first_zone_and_holds_the_rest() -> None:
    old = {c: live_of(deploy("web:1")) for c in ZONES}
    plan = rollout.begin(APP, {c: deploy("web:2") for c in ZONES}, ZONES, old, None, "r2")
    assert plan.started_new and plan.state.zone == 0 and plan.state.zones == ["za", "zb", "zc"]
    assert [c for c in ZONES if plan.allowed(c)] == ["a1"]
    held = rollout.hold(plan.desired["b1"], old["b1"])
    assert held["spec"]["template"] == old["b1"]["spec"]["template"]
    # the same target continues from the stored state, a halted one stays halted
    stored = rollout.State(plan.state.target, "r2", plan.state.zones, zone=1,
                           phase=rollout.HALTED)
    again = rollout.begin(APP, {c: deploy("web:2") for c in ZONES}, ZONES, old, stored, "r3")
    assert not again.started_new and again.state.phase == rollout.HALTED
    assert [c for c in ZONES if again.allowed(c)] == ["a1", "b1"]
    # a first deployment, or no template change, has no gates
    fresh = rollout.begin(APP, {c: deploy("web:1") for c in ZONES}, ZONES,
                          {c: None for c in ZONES}, None, "r1")
    assert fresh.state.phase == rollout.COMPLETE and all(fresh.allowed(c) for c in ZONES)


def test_zones_are_promoted_only_when_the_previous_is_rolled_out_and_halt_on_timeout() -> None:
    old = {c: live_of(deploy("web:1")) for c in ZONES}
    plan = rollout.begin(APP, {c: deploy("web:2") for c in ZONES}, ZONES, old, None, "r2")
    live = {"a1": live_of(plan.desired["a1"]), "b1": old["b1"], "c1": old["c1"]}
    applied, events = [], []
    clock = [1000.0]
    plan.state.since = clock[0]

    def apply(cluster: str, obj: dict[str, Any]) -> None:
        applied.append(cluster)
        # zone b's new pods never become available
        live[cluster] = live_of(obj, ready=cluster != "b1", generation=2)

    def sleep(seconds: float) -> None:
        clock[0] += seconds

    state = rollout.advance(plan, apply=apply, fetch=lambda c, _o: live[c],
                            record=lambda r, m: events.append(r), save=lambda s: None,
                            clock=lambda: clock[0], sleep=sleep)
    assert applied == ["b1"]
    assert state.phase == rollout.HALTED and state.zones[state.zone] == "zb"
    assert "0/2 updated pods available" in state.message
    assert events == ["ZonePromoted", "RolloutHalted"]
    assert clock[0] - 1000.0 >= 30  # waited the zone's health timeout, no longer


def test_rolled_out_needs_the_generation_observed_and_every_pod_updated() -> None:
    obj = live_of(deploy("web:2"))
    assert rollout.rolled_out(obj) == (True, "")
    obj["metadata"]["generation"] = 2
    assert rollout.rolled_out(obj)[1] == "the new generation is not observed yet"
    obj = live_of(deploy("web:2"))
    obj["status"]["replicas"] = 3
    assert "old pods still running" in rollout.rolled_out(obj)[1]


def test_status_of_an_app_with_an_unreachable_cluster_and_a_halted_rollout() -> None:
    from reconciler.model import ObjectRef

    healthy = live_of(deploy("web:1"))
    healthy["status"]["readyReplicas"] = 2
    healthy["status"]["conditions"] = [{"type": "Available", "status": "True"}]
    views = [status_document.ClusterView("a1", [(ObjectRef("a1", "apps/v1", "Deployment",
                                                           "shop", "web"), healthy)]),
             status_document.ClusterView("b1", error="connection refused")]
    doc = status_document.app_status(views, revision="r1", rollout=None, previous=None,
                                     applied=True, now=0)
    assert doc["phase"] == "Unknown" and doc["ready"] == "2/2"
    assert doc["clusters"][1] == {"name": "b1", "phase": "Unknown",
                                  "message": "cluster unreachable: connection refused"}
    halted = status_document.app_status(
        views[:1], revision="r2", previous=doc, applied=False,
        rollout={"phase": "Halted", "message": "zone zb not healthy"})
    assert halted["phase"] == "Degraded" and "zone zb not healthy" in halted["message"]
    assert halted["lastAppliedRevision"] == "r1"  # nothing applied in this pass
    assert not status_document.changed(doc, {**doc, "lastAppliedTime": "later"})
    assert status_document.changed(doc, halted)


def test_a_connection_keeps_a_connection_for_every_watch_and_worker(tmp_path: Any) -> None:
    """serve watches every managed kind while a pass's workers send requests: each of
    those threads gets a kept-alive connection (the client's default, 5 per CPU, made
    serve log 'Connection pool is full, discarding connection' and open a new TLS
    connection per request)."""
    import yaml

    from reconciler import kinds
    from reconciler.clients.connect import Connection
    from reconciler.sync import Options

    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "a",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "a", "context": {"cluster": "c", "user": "u"}}]}))
    conn = Connection("a", "a", str(path))
    try:
        pool = conn.api.rest_client.pool_manager.connection_pool_kw["maxsize"]
        assert pool >= len(kinds.MANAGED_KINDS) + 2 * Options().workers
    finally:
        conn.close()
