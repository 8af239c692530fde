"""`serve` in-process against a real bare repository, with a recording fake runner:
webhooks, coalescing, compile failures, resync, status, metrics, audit, post-receive. A
test that shows no pass runs hands serve a fake clock and lets its time pass."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_runner import AtOnce, Recorder

from reconciler.clock import SYSTEM_CLOCK, Clock
from reconciler.serve.app import ServeApp, ServeOptions
from reconciler.serve.webhooks import GENERIC_SIGNATURE_HEADER, sign
from tests.support.clock import FakeClock
from tests.support.serve import (
    BAD_SPEC,
    REPO_ROOT,
    SpecRepo,
    get_json,
    git,
    http,
    serve_status,
)
from tests.support.wait import wait_for

SECRET = b"test-secret"
Serve = Callable[..., tuple[ServeApp, Recorder, str]]


def push_hook(base: str, after: str, ref: str = "refs/heads/main", secret: bytes = SECRET,
              signature: str | None = None) -> tuple[int, dict[str, Any]]:
    body = json.dumps({"ref": ref, "after": after}).encode()
    headers = {"Content-Type": "application/json",
               GENERIC_SIGNATURE_HEADER: signature if signature is not None
               else sign(secret, body)}
    status, answer = http("POST", f"{base}/webhooks/generic", body, headers)
    return status, json.loads(answer)


@pytest.fixture
def serve(spec_repo: SpecRepo, tmp_path: Path) -> Iterator[Serve]:
    apps: list[ServeApp] = []

    def start(delay: float = 0.0, clock: Clock = SYSTEM_CLOCK, **options: Any
              ) -> tuple[ServeApp, Recorder, str]:
        recorder = Recorder(delay=delay, record=str(tmp_path / "passes.jsonl"))
        settings: dict[str, Any] = {
            "listen": "127.0.0.1:0", "secret": SECRET, "coalesce": 0.2, "resync": 600.0,
            "leader_election": False, "events": False, "audit_log": tmp_path / "audit.jsonl",
            "max_body": 64 * 1024, "shutdown_timeout": 10.0, "app_status": False,
            "open_status": True} | options
        app = ServeApp(ServeOptions(repo=str(spec_repo.bare), **settings), recorder, clock)
        app.start()
        apps.append(app)
        host, port = app.address
        return app, recorder, f"http://{host}:{port}"

    yield start
    for app in apps:
        app.stop()


def let_pass(clock: FakeClock, seconds: float) -> None:
    """Let ``seconds`` of serve's time pass; return once its worker has seen them and
    done whatever they made due (a pass, here)."""
    clock.settle(threads=2)  # the worker and its pass-deadline watch wait on the clock
    clock.advance(seconds)
    clock.settle(threads=2)


def audit_lines(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def metric(base: str, line_start: str) -> float:
    status, text = http("GET", f"{base}/metrics")
    assert status == 200
    for line in text.decode().splitlines():
        if line.startswith(line_start + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_a_signed_push_is_applied_and_reported(serve: Serve, spec_repo: SpecRepo,
                                               tmp_path: Path) -> None:
    _app, recorder, base = serve(delay=1.0)
    assert http("GET", f"{base}/healthz")[0] == 200
    assert http("GET", f"{base}/readyz")[0] == 503, "ready before the first pass finished"
    wait_for(lambda: recorder.applied == [spec_repo.first], 120, "the start-up pass")
    wait_for(lambda: http("GET", f"{base}/readyz")[0] == 200, 120, "readiness")

    sha = spec_repo.commit("search: bump image")
    assert push_hook(base, sha) == (202, {"result": "accepted",
                                          "message": f"refs/heads/main at {sha[:12]} queued"})
    wait_for(lambda: recorder.applied[-1:] == [sha], 120, "the pushed revision applied")

    status = wait_for(lambda: (s := serve_status(base))["lastApplied"]
                      and s["lastApplied"]["revision"] == sha and s, 120, "the push in /status")
    last = status["lastPass"]
    assert (last["outcome"], last["trigger"], last["author"], last["subject"]) == \
        ("applied", "push", "Ada Lovelace", "search: bump image")
    assert last["push_to_applied_seconds"] is not None and last["writes"] > 0
    assert status["ready"] is True
    # no host cluster here: the apps part says so instead of failing the whole document
    assert get_json(f"{base}/status")["apps"] is None
    assert status["appsError"] == "no host cluster configured"

    labels = f'{{revision="{sha}"}}'
    assert metric(base, f"pincompile_serve_last_applied_revision{labels}") == 1.0
    assert metric(base, 'pincompile_serve_webhook_requests_total'
                        '{provider="generic",result="accepted"}') == 1.0
    assert metric(base, 'pincompile_serve_pass_duration_seconds_count{outcome="ok"}') == 2.0
    assert metric(base, "pincompile_serve_push_to_applied_seconds_count") == 1.0
    assert metric(base, 'pincompile_serve_objects_total'
                        '{action="updated",cluster="use1a-general-01"}') > 0
    assert 0 <= metric(base, "pincompile_serve_last_applied_age_seconds") < 60

    records = audit_lines(tmp_path)
    assert [r["revision"] for r in records] == [spec_repo.first, sha]
    assert records[-1]["author"] == "Ada Lovelace"
    assert records[-1]["subject"] == "search: bump image"
    assert records[-1]["outcome"] == "applied" and records[-1]["duration_seconds"] >= 1.0
    changed = records[-1]["clusters"]["use1a-general-01"]
    assert changed["changed"] > 0 and changed["pruned"] == 0 and changed["error"] is None


def test_bad_webhooks_apply_nothing(serve: Serve, spec_repo: SpecRepo) -> None:
    clock = FakeClock()
    _app, recorder, base = serve(clock=clock)
    let_pass(clock, 0.2)
    assert recorder.applied == [spec_repo.first], "the start-up pass"
    sha = spec_repo.commit("would be applied by any pass")
    assert push_hook(base, sha, secret=b"wrong")[0] == 401
    assert push_hook(base, sha, signature="")[0] == 401
    status, _ = http("POST", f"{base}/webhooks/generic", b"{}",
                     {"Content-Type": "application/json"})
    assert status == 401
    big = json.dumps({"ref": "refs/heads/main", "after": sha, "pad": "x" * 70_000}).encode()
    status, _ = http("POST", f"{base}/webhooks/generic", big,
                     {GENERIC_SIGNATURE_HEADER: sign(SECRET, big)})
    assert status == 413
    other = spec_repo.commit("on a feature branch", branch="feature")
    assert push_hook(base, other, ref="refs/heads/feature") == \
        (200, {"result": "ignored",
               "message": "refs/heads/feature is not the followed branch refs/heads/main"})
    let_pass(clock, 10 * 0.2)  # ten coalescing windows
    assert recorder.applied == [spec_repo.first]
    assert metric(base, 'pincompile_serve_webhook_requests_total'
                        '{provider="generic",result="unauthorized"}') == 3.0
    assert metric(base, 'pincompile_serve_webhook_requests_total'
                        '{provider="generic",result="too_large"}') == 1.0


def test_three_quick_pushes_apply_only_the_newest(serve: Serve, spec_repo: SpecRepo) -> None:
    clock = FakeClock()
    _app, recorder, base = serve(coalesce=2.0, clock=clock)
    let_pass(clock, 2.0)
    assert recorder.applied == [spec_repo.first], "the start-up pass"
    shas = []
    for i in range(3):
        shas.append(spec_repo.commit(f"push {i}"))
        assert push_hook(base, shas[-1])[0] == 202
    let_pass(clock, 1.9)
    assert recorder.applied == [spec_repo.first], "a pass within the coalescing window"
    let_pass(clock, 0.1)
    assert recorder.applied == [spec_repo.first, shas[-1]]
    let_pass(clock, 5 * 2.0)  # any further (wrong) pass would have run by now
    assert recorder.applied == [spec_repo.first, shas[-1]]


def test_pushes_during_a_slow_pass_never_apply_an_older_revision_later(
        serve: Serve, spec_repo: SpecRepo) -> None:
    _app, recorder, base = serve(delay=1.5, coalesce=0.1)
    wait_for(lambda: recorder.applied == [spec_repo.first], 120, "the start-up pass")
    shas = [spec_repo.first]
    for i in range(4):
        shas.append(spec_repo.commit(f"push {i}"))
        assert push_hook(base, shas[-1])[0] == 202
        time.sleep(0.6)
    wait_for(lambda: recorder.applied[-1] == shas[-1], 60, "the newest applied")
    order = [shas.index(rev) for rev in recorder.applied]
    assert order == sorted(order), f"an older revision was applied after a newer one: {order}"
    assert len(recorder.applied) < len(shas), "no push was coalesced"


def test_a_commit_that_fails_to_compile_applies_nothing_until_fixed(
        serve: Serve, spec_repo: SpecRepo, tmp_path: Path) -> None:
    _app, recorder, base = serve()
    wait_for(lambda: recorder.applied == [spec_repo.first], 120, "the start-up pass")
    bad = spec_repo.commit("broken spec", files={"apps/search/broken.yaml": BAD_SPEC})
    assert push_hook(base, bad)[0] == 202
    status = wait_for(lambda: (s := serve_status(base))["lastPass"]["revision"] == bad
                      and s, 120, "the failed pass in /status")
    assert recorder.applied == [spec_repo.first]
    last = status["lastPass"]
    assert last["outcome"] == "compile-failed" and "compile failed with" in last["error"]
    assert any(d.startswith("apps/search/broken.yaml:5:") for d in last["diagnostics"])
    assert status["lastApplied"]["revision"] == spec_repo.first
    assert metric(base, 'pincompile_serve_pass_errors_total{stage="compile"}') == 1.0
    assert audit_lines(tmp_path)[-1]["outcome"] == "compile-failed"

    spec_repo.remove("apps/search/broken.yaml")
    fixed = spec_repo.commit("fix the spec")
    assert push_hook(base, fixed)[0] == 202
    wait_for(lambda: recorder.applied == [spec_repo.first, fixed], 120, "the fix applied")
    wait_for(lambda: serve_status(base)["lastPass"]["outcome"] == "applied", 120,
             "the fix in /status")


def test_resync_reconciles_without_pushes(serve: Serve, spec_repo: SpecRepo,
                                          tmp_path: Path) -> None:
    clock = FakeClock()
    _app, recorder, base = serve(resync=60.0, clock=clock)
    let_pass(clock, 0.2)
    assert len(recorder.applied) == 1, "the start-up pass"
    let_pass(clock, 59.0)
    assert len(recorder.applied) == 1, "a resync before the quiet minute was over"
    let_pass(clock, 1.0)
    let_pass(clock, 60.0)
    assert recorder.applied == [spec_repo.first] * 3, "two resyncs"
    assert [r["trigger"] for r in audit_lines(tmp_path)[:3]] == ["start", "resync", "resync"]
    assert metric(base, 'pincompile_serve_drift_objects_total{cluster="use1a-general-01"}') \
        == 0.0


def test_post_receive_hook_of_a_bare_server_triggers_a_pass(
        serve: Serve, spec_repo: SpecRepo, tmp_path: Path) -> None:
    _app, recorder, base = serve()
    wait_for(lambda: recorder.applied == [spec_repo.first], 120, "the start-up pass")
    hook = spec_repo.bare / "hooks" / "post-receive"
    shutil.copy(REPO_ROOT / "contrib" / "post-receive", hook)
    secret_file = tmp_path / "secret"
    secret_file.write_bytes(SECRET + b"\n")
    git(spec_repo.bare, "config", "pincompile.url", f"{base}/webhooks/generic")
    git(spec_repo.bare, "config", "pincompile.secretFile", str(secret_file))
    sha = spec_repo.commit("pushed to a plain git server")
    wait_for(lambda: recorder.applied[-1:] == [sha], 120, "the hook's push applied")
    assert metric(base, 'pincompile_serve_webhook_requests_total'
                        '{provider="generic",result="accepted"}') == 1.0


def test_a_reconciler_that_raises_does_not_stop_the_worker(spec_repo: SpecRepo,
                                                            tmp_path: Path) -> None:
    recorder = Recorder()
    calls: list[str] = []

    class Exploding(AtOnce):
        def __init__(self, scope: frozenset[str] | None, _clock: Clock) -> None:
            self.inner = recorder(scope)

        def report(self, result: Any) -> Any:
            calls.append("run")
            if len(calls) == 1:
                raise RuntimeError("engine bug")
            return self.inner.report(result)

        def close(self) -> None:
            self.inner.close()

    app = ServeApp(ServeOptions(repo=str(spec_repo.bare), listen="127.0.0.1:0", secret=SECRET,
                                coalesce=0.1, leader_election=False, events=False,
                                app_status=False, open_status=True),
                   Exploding)
    app.start()
    try:
        host, port = app.address
        base = f"http://{host}:{port}"
        failed = wait_for(lambda: (s := serve_status(base))["lastPass"] and s, 120,
                          "the first pass in /status")
        assert failed["lastPass"]["outcome"] == "reconcile-failed"
        assert "RuntimeError: engine bug" in failed["lastPass"]["error"]
        assert failed["ready"] is False
        sha = spec_repo.commit("after the crash")
        assert push_hook(base, sha)[0] == 202
        wait_for(lambda: recorder.applied == [sha], 120, "the worker survived")
        assert metric(base, 'pincompile_serve_pass_errors_total{stage="reconcile"}') == 1.0
    finally:
        app.stop()


#: the slow clients' test: how long serve waits for a request's head and body
READ_TIMEOUT = 4.0


def test_slow_clients_hold_no_thread_and_are_dropped(serve: Serve, spec_repo: SpecRepo) -> None:
    """200 connections from one address (its whole share, --max-client-connections) that
    send headers announcing a body and never send it: serve's threads stay bounded,
    /healthz answers throughout, and each is answered 408 and closed after the read
    timeout."""
    import socket
    import threading

    _app, recorder, base = serve(read_timeout=READ_TIMEOUT)
    wait_for(lambda: recorder.applied == [spec_repo.first], 120, "the start-up pass")
    host, port = base.removeprefix("http://").split(":")
    before = threading.active_count()
    slow = []
    for _ in range(200):
        s = socket.create_connection((host, int(port)), timeout=30,
                                     source_address=("127.0.0.2", 0))  # not the probe's
        s.sendall(b"POST /webhooks/generic HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Type: application/json\r\nContent-Length: 60000\r\n\r\n{")
        slow.append(s)
    threads = [threading.active_count()]
    started = time.monotonic()
    while time.monotonic() - started < 1.5:  # while they are all held
        threads.append(threading.active_count())
        t0 = time.monotonic()
        assert http("GET", f"{base}/healthz")[0] == 200
        # behind them, it would wait until they are dropped (the read timeout); a loaded
        # machine took 1.2 s to answer a free /healthz
        assert time.monotonic() - t0 < READ_TIMEOUT / 2, "/healthz waited behind the slow clients"
    assert max(threads) <= before + 2, f"threads grew with slow clients: {before} -> {threads}"
    dropped = 0
    for s in slow:  # each is answered 408 and closed by the server (or reset)
        s.settimeout(max(0.1, started + 15 - time.monotonic()))
        answer = b""
        try:
            while chunk := s.recv(4096):
                answer += chunk
            dropped += answer == b"" or answer.startswith(b"HTTP/1.1 408")
        except ConnectionResetError:
            dropped += 1
        except TimeoutError:
            pass
        s.close()
    assert dropped == 200, f"{200 - dropped} slow clients held beyond the read timeout"
    assert http("GET", f"{base}/healthz")[0] == 200


def test_status_and_metrics_are_closed_by_default_and_open_to_the_status_token(
        serve: Serve) -> None:
    _app, _recorder, base = serve(open_status=False, status_token=b"t0ken")
    for path in ("/status", "/metrics"):
        assert http("GET", f"{base}{path}")[0] == 401
        assert http("GET", f"{base}{path}", headers={"Authorization": "Bearer guess"})[0] == 401
        assert http("GET", f"{base}{path}", headers={"Authorization": "Basic t0ken"})[0] == 401
        assert http("GET", f"{base}{path}", headers={"Authorization": "Bearer t0ken"})[0] == 200
    assert http("GET", f"{base}/healthz")[0] == 200
    assert http("GET", f"{base}/readyz")[0] in (200, 503)


def test_a_replayed_webhook_is_refused(serve: Serve, spec_repo: SpecRepo) -> None:
    _app, recorder, base = serve()
    wait_for(lambda: recorder.applied == [spec_repo.first], 120, "the start-up pass")
    sha = spec_repo.commit("pushed once")
    body = json.dumps({"ref": "refs/heads/main", "after": sha}).encode()
    headers = {"Content-Type": "application/json", GENERIC_SIGNATURE_HEADER: sign(SECRET, body),
               "X-Pincompile-Delivery": "delivery-1"}
    assert http("POST", f"{base}/webhooks/generic", body, headers)[0] == 202
    status, answer = http("POST", f"{base}/webhooks/generic", body, headers)
    assert status == 409 and json.loads(answer)["result"] == "replayed"
    assert metric(base, 'pincompile_serve_webhook_requests_total'
                        '{provider="generic",result="replayed"}') == 1.0
