"""`pincompile serve` as a command: its help, its usage errors, and SIGTERM."""

from __future__ import annotations

import signal
import time
from pathlib import Path

from click.testing import CliRunner

from pincompile.cli import cli
from tests.support.serve import ServeProcess, SpecRepo
from tests.support.wait import wait_for


def test_help_teaches_endpoints_and_examples() -> None:
    result = CliRunner().invoke(cli, ["serve", "--help"])
    assert result.exit_code == 0
    for needle in ("/webhooks/github", "X-Gitlab-Token", "X-Gitea-Signature",
                   "contrib/post-receive", "/metrics", "--shards", "Examples:",
                   "PINCOMPILE_WEBHOOK_SECRET", "PINCOMPILE_STATUS_TOKEN", "--replay-window",
                   "--read-timeout", "Exit codes"):
        assert needle in result.output, needle
    assert "--runner" not in result.output


def test_usage_errors_exit_2_without_a_traceback(tmp_path: Path) -> None:
    runner = CliRunner()
    for args, message in (
            (["--resync", "soon"], "not a duration"),
            (["--lease-duration", "5s", "--renew-deadline", "10s"], "lease timing"),
            (["--shards", "2", "--no-leader-election"], "--shards needs leader election"),
            (["--webhook-secret-file", str(tmp_path / "missing")], "cannot read"),
            (["--status-token-file", str(tmp_path / "missing")],
             "cannot read --status-token-file"),
            (["--listen", "nowhere", "--no-leader-election", "--no-events",
              "--runner", "fake_runner:factory"], "--listen must look like")):
        result = runner.invoke(cli, ["serve", "--repo", str(tmp_path), *args])
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output, (args, result.output)
        assert "Traceback" not in result.output


def test_sigterm_lets_the_pass_in_flight_finish(spec_repo: SpecRepo, tmp_path: Path) -> None:
    serve = ServeProcess(spec_repo.bare, tmp_path / "passes.jsonl", "--no-leader-election",
                         "--no-events", delay=3.0)
    try:
        wait_for(lambda: serve.passes("start"), 60, "the first pass to start",
                 interval=0.05, describe=serve.log.read_text)
        serve.proc.send_signal(signal.SIGTERM)
        assert serve.proc.wait(timeout=60) == 0, serve.log.read_text()
        assert [p["revision"] for p in serve.passes()] == [spec_repo.first], \
            "the pass in flight was cut short"
    finally:
        serve.stop()


def test_sigterm_does_not_wait_longer_than_the_shutdown_timeout(spec_repo: SpecRepo,
                                                                 tmp_path: Path) -> None:
    serve = ServeProcess(spec_repo.bare, tmp_path / "passes.jsonl", "--no-leader-election",
                         "--no-events", "--shutdown-timeout", "1s", delay=60.0)
    try:
        wait_for(lambda: serve.passes("start"), 60, "the first pass to start",
                 interval=0.05, describe=serve.log.read_text)
        start = time.monotonic()
        serve.proc.send_signal(signal.SIGTERM)
        assert serve.proc.wait(timeout=30) == 1
        assert time.monotonic() - start < 15
        assert "did not finish within 1s" in serve.log.read_text()
    finally:
        serve.stop()
