"""bench/api_bench.py's helpers: the load generator counts what a server answered, and
the member caches' synthetic objects are ones the API's pod and Event code reads."""

from __future__ import annotations

import shutil
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench import api_load, member_caches
from reconciler.api.member_events import lean_event, pods_objects
from reconciler.api.pods import pod_summary
from reconciler.status.document import app_of

APP = ("PinApp", "ads", "web")


class Answers(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: Counter[tuple[str, str]] = Counter()

    def do_GET(self) -> None:
        Answers.seen[(self.path, self.headers.get("Authorization", ""))] += 1
        body = b"missing" if self.path == "/missing" else b'{"ok": true}'
        self.send_response(404 if self.path == "/missing" else 200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    Answers.seen.clear()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Answers)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


needs_wrk = pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed")


@needs_wrk
def test_the_load_generator_asks_every_path_with_the_headers_and_counts_the_answers(
        server: str) -> None:
    got = api_load.run(server, ["/a", "/b"], 4, 1.0, {"Authorization": "Bearer t"})
    assert got.errors == 0
    assert set(Answers.seen) == {("/a", "Bearer t"), ("/b", "Bearer t")}
    # a few requests may still be on the wire when wrk stops counting
    assert 0 < got.requests <= sum(Answers.seen.values()) <= got.requests + 4
    assert 0 < got.p50_ms <= got.p99_ms <= got.max_ms
    assert got.cpu_ms > 0
    assert api_load.body_bytes(server, ["/a"], {}) == len(b'{"ok": true}')


@needs_wrk
def test_an_error_answer_is_counted(server: str) -> None:
    assert api_load.run(server, ["/missing"], 2, 1.0, {}).errors > 0


def test_the_synthetic_pods_are_read_as_the_api_reads_a_running_pod() -> None:
    pods = [member_caches.pod(APP, "rt-a", i) for i in range(member_caches.PODS_PER_APP)]
    assert {app_of(p) for p in pods} == {APP}
    summary = pod_summary("rt-a", pods[0])
    assert (summary.phase, summary.ready, summary.node) == ("Running", "1/1", "rt-a-node-0")
    assert len({p["metadata"]["name"] for p in pods}) == len(pods)
    owners = {ref for ref in pods_objects(pods) if ref[0] == "ReplicaSet"}
    assert owners == {("ReplicaSet", "ads", "web-5d8f6b9c7")}


def test_every_synthetic_event_is_one_the_events_cache_keeps_and_finds_the_app_of() -> None:
    pods = [member_caches.pod(APP, "rt-a", i) for i in range(member_caches.PODS_PER_APP)]
    events = list(member_caches.events(pods, "rt-a"))
    assert len(events) == len(member_caches.EVENTS_PER_ROLLOUT)
    kept = [lean_event(e) for e in events]
    assert all(k is not None and "managedFields" not in k["metadata"] for k in kept)
    apps = pods_objects(pods)
    named = {(e["involvedObject"]["kind"], e["involvedObject"]["namespace"],
              e["involvedObject"]["name"]) for e in events}
    # a Deployment's app is looked up by a GET of it; every other one is the pods'
    assert {ref for ref in named if ref[0] != "Deployment"} <= set(apps)


def test_the_memory_rows_count_every_pod_and_event() -> None:
    rows = member_caches.memory([APP, ("PinPod", "ml", "box")], ["rt-a", "rt-b"])
    assert "(12 pods:" in rows[0]
    assert f"({4 * len(member_caches.EVENTS_PER_ROLLOUT)} Events:" in rows[2]
    assert all(" MiB" in row for row in rows)
