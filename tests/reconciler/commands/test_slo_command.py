"""``pincompile slo`` and ``pincompile verify`` through the command line: rules for the
declared SLOs (a mistake located in the file), the SLOs' table from a store, and verify's
exit codes against a server that answers as serve does."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from pincompile.cli import cli
from reconciler.store import Store
from reconciler.store import verification as kept


def run(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_rules_come_from_the_declared_slos_and_a_mistake_is_located(tmp_path: Path) -> None:
    (tmp_path / "pincompile.yaml").write_text(
        "slos:\n  - {name: push, sli: push-to-applied, objective: 95, threshold: 30s}\n")
    rules = run("slo", "--prometheus-rules", str(tmp_path))
    assert rules.exit_code == 0
    assert [g["name"] for g in yaml.safe_load(rules.output)["groups"]] == ["pincompile-slo-push"]
    (tmp_path / "pincompile.yaml").write_text(
        "slos:\n  - {name: push, sli: push-to-applied, objective: 95, threshold: 4s}\n")
    wrong = run("slo", "--prometheus-rules", str(tmp_path))
    assert wrong.exit_code == 1
    assert f"{tmp_path / 'pincompile.yaml'}:2:" in wrong.output
    assert "threshold 4s is not a bucket of the push-to-applied histogram" in wrong.output


def test_the_table_reads_the_store_and_exit_code_says_an_slo_is_missed(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'insight.db'}"
    store = Store.open(url)
    kept.add_samples(store, [kept.SLISample(
        "api-availability", (("group", "workload"),),
        datetime.now(UTC) - timedelta(minutes=5), 100, 2)], "serve-a")
    store.close()
    table = CliRunner().invoke(cli, ["slo", str(tmp_path), "--store", url],
                               env={"COLUMNS": "160"}, catch_exceptions=False)  # every column
    assert table.exit_code == 0, table.output
    line = next(x for x in table.output.splitlines() if x.startswith("api-availability"))
    assert line.split()[1:6] == ["99.9%", "30d", "98.000%", "-1900.0%", "20.00"]
    assert "no data" in table.output  # the latency SLOs have no samples
    assert run("slo", str(tmp_path), "--store", url, "--exit-code").exit_code == 1
    documents = json.loads(run("slo", str(tmp_path), "--store", url, "-o", "json").output)
    assert documents[0]["burnRates"]["1h"] == pytest.approx(20.0)


def test_slo_and_verify_need_somewhere_to_read() -> None:
    assert run("slo").exit_code == 2
    assert run("verify").exit_code == 2


class Serve(BaseHTTPRequestHandler):
    """Answers POST /api/v1/verify as serve does (``answers``: status, document)."""

    answer: tuple[int, dict[str, Any]] = (200, {})
    seen: list[str] = []

    def do_POST(self) -> None:
        self.seen.append(self.path)
        status, document = self.answer
        body = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: Any) -> None:
        return


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Serve)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def probe(cluster: str, ok: bool) -> dict[str, Any]:
    return {"cluster": cluster, "tier": "reserved", "started": "2026-11-28T12:00:00Z",
            "ok": ok, "stage": "passed" if ok else "launch",
            "message": "" if ok else "0 of 1 pods Ready (1 Pending, not scheduled) after 15s",
            "launch_seconds": 2.1 if ok else None, "logs_ok": ok or None,
            "exec_ok": ok or None, "seconds": 3.0, "requests": 14}


def test_verify_exits_1_naming_each_failed_cluster(server: str) -> None:
    Serve.answer = (200, {"ok": False, "probes": [probe("east-a", True),
                                                   probe("east-b", False)]})
    Serve.seen = []
    failed = run("verify", "--server", server, "--cluster", "east-a", "--cluster", "east-b")
    assert failed.exit_code == 1
    assert "verify: east-b/reserved failed at launch: 0 of 1 pods Ready" in failed.output
    assert "east-a/reserved failed" not in failed.output
    assert Serve.seen == ["/api/v1/verify?cluster=east-a&cluster=east-b"]
    Serve.answer = (200, {"ok": True, "probes": [probe("east-a", True)]})
    assert run("verify", "--server", server).exit_code == 0


def test_verify_refused_by_the_server_exits_3(server: str) -> None:
    Serve.answer = (403, {"detail": "alice may not post /api/v1/verify"})
    refused = run("verify", "--server", server)
    assert refused.exit_code == 3 and "403" in refused.output
