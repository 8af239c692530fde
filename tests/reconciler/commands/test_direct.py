"""Without --server the remote commands run the API in this process on the kubeconfig's
clusters: what they need and how they fail, before any cluster answers (the fleet tests
are in tests/reconciler/api/test_actions_e2e.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from pincompile.cli import cli
from reconciler.api.access import AccessError
from reconciler.commands.direct import KubeconfigAccess
from tests.support.kubeconfig import kubeconfig_to

APP = "PinApp/shop/web"


@pytest.mark.parametrize("command", ["events", "history"])
def test_a_store_url_naming_no_store_is_a_usage_error_and_creates_nothing(
        command: str, tmp_path: Path) -> None:
    config = kubeconfig_to(tmp_path, "https://127.0.0.1:9")
    named = tmp_path / "typo.db"
    done = CliRunner().invoke(cli, [command, APP, "--kubeconfig", str(config), "--store",
                                    f"sqlite:///{named}"], env={"PINCOMPILE_SERVER": None})
    assert done.exit_code == 2, done.output
    assert "no insight store at" in done.output and str(named) in done.output, done.output
    assert not named.exists()


@pytest.mark.parametrize("args", [["get", "apps"], ["logs", APP], ["exec", APP, "--", "true"],
                                  ["restart", APP], ["rollout", "pause", APP]])
def test_without_server_a_missing_kubeconfig_is_a_usage_error(args: list[str],
                                                               tmp_path: Path) -> None:
    where = 2 if args[0] == "rollout" else 1
    done = CliRunner().invoke(cli, [*args[:where], "--kubeconfig", str(tmp_path / "missing"),
                                    *args[where:]], env={"PINCOMPILE_SERVER": None})
    assert done.exit_code == 2, done.output
    assert "missing: no such file" in done.output and "Traceback" not in done.output


def test_without_server_an_unreachable_host_exits_3_without_leaking_the_token(
        tmp_path: Path) -> None:
    config = kubeconfig_to(tmp_path, "https://127.0.0.1:9")
    done = CliRunner().invoke(cli, ["get", "apps", "--kubeconfig", str(config)],
                              env={"PINCOMPILE_SERVER": None})
    assert done.exit_code == 3, done.output
    assert "host cluster unreachable" in done.output, done.output
    assert "kube-secret-token" not in done.output and done.output.count("\n") == 1


def test_the_in_process_api_answers_only_its_own_token_and_leaves_rbac_to_the_clusters(
        ) -> None:
    access = KubeconfigAccess("s3cret", "kubeconfig:host")
    caller = access.authenticate("s3cret")
    assert access.allowed(caller, "exec", "PinApp", "any-project")
    with pytest.raises(AccessError) as refused:
        access.authenticate("guess")
    assert refused.value.status == 401


def test_help_says_which_way_in_and_what_each_needs() -> None:
    shown = CliRunner().invoke(cli, ["logs", "--help"], terminal_width=100).output
    for needed in ("--server", "$PINCOMPILE_TOKEN", "straight to the clusters",
                   "--kubeconfig", "--host-context"):
        assert needed in shown, needed
    history = CliRunner().invoke(cli, ["history", "--help"], terminal_width=100).output
    assert "--store URL" in history
