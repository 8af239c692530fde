"""Errors that help: a mistyped command gets what was meant (exit 2), durations read as
durations everywhere, and without --server nothing names the API server running inside
the command (its logs stay out of the terminal, its failures are said as the clusters')."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from click.testing import CliRunner

from pincompile.cli import cli
from reconciler.api.client import ApiClient, ApiError, ServerUnreachable
from reconciler.commands.direct import QUIET_LOGGERS, _served
from reconciler.commands.remote import failure


@pytest.mark.parametrize(("typed", "meant"), [("valdate", "validate"), ("decsribe", "describe"),
                                              ("histroy", "history")])
def test_a_mistyped_command_is_a_usage_error_naming_the_one_meant(typed: str, meant: str
                                                                  ) -> None:
    done = CliRunner().invoke(cli, [typed, "x"])
    assert done.exit_code == 2
    assert f"No such command '{typed}'. Did you mean '{meant}'?" in done.output


def test_an_unknown_command_lists_the_commands() -> None:
    done = CliRunner().invoke(cli, ["xyzzy"])
    assert done.exit_code == 2 and "Commands: apply, " in done.output


def test_apply_takes_its_timeout_as_a_duration(tmp_path: Path) -> None:
    wrong = CliRunner().invoke(cli, ["apply", str(tmp_path), "--timeout", "5x"])
    assert wrong.exit_code == 2 and "'5x' is not a duration like 30s, 5m" in wrong.output
    right = CliRunner().invoke(cli, ["apply", str(tmp_path), "--timeout", "5m",
                                     "--kubeconfig", str(tmp_path / "none")])
    assert "--timeout" not in right.output and "no such file" in right.output


def test_without_server_a_failure_is_the_clusters_and_names_no_server() -> None:
    here = ApiClient("http://127.0.0.1:1", "t", timeout=15, in_process=True)
    there = ApiClient("https://pincompute.internal", "t")
    slow = ServerUnreachable("http://127.0.0.1:1: timed out")
    assert failure("PinApp/a/b", slow, here) == (
        "PinApp/a/b: the clusters did not answer within 15s (--timeout)", 3)
    assert failure("PinApp/a/b", slow, there)[0].startswith("server unreachable:")
    refused = ApiError(503, "no member cluster can be read")
    assert failure("PinApp/a/b", refused, here) == (
        "PinApp/a/b: no member cluster can be read", 3)
    assert "the server answered 503" in failure("PinApp/a/b", refused, there)[0]
    assert failure("PinApp/a/b", ApiError(404, "not found"), here)[1] == 1


def test_the_api_served_in_the_command_logs_nothing_to_the_terminal(
        capsys: pytest.CaptureFixture[str]) -> None:
    with _served(None):  # type: ignore[arg-type]
        for name in QUIET_LOGGERS:
            logging.getLogger(f"{name}.error").error("ASGI callable returned without "
                                                     "completing handshake.")
    captured = capsys.readouterr()
    assert "handshake" not in captured.err + captured.out
