"""``KIND/PROJECT/NAME``: one parser, one message naming the wrong part, in every command
that takes it (explain, set, status, fleet load)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from pincompile.appref import AppRef, AppRefError, parse_app_ref
from pincompile.cli import cli


def test_a_reference_parses_to_the_catalog_key() -> None:
    ref = parse_app_ref("PinApp/search/search-api")
    assert ref == ("PinApp", "search", "search-api") and str(ref) == "PinApp/search/search-api"
    assert parse_app_ref("pinterestservice/ads/ads-serving").kind == "PinterestService"
    assert parse_app_ref("Cluster//use1a-general-01") == AppRef("Cluster", "", "use1a-general-01")


@pytest.mark.parametrize(("text", "says"), [
    ("search-api", "1 part(s) separated by '/', expected 3"),
    ("a/b/c/d", "more than 3 part(s)"),
    ("PinAp/search/web", "KIND 'PinAp' is not a kind; did you mean 'PinApp'?"),
    ("Deployment/search/web", "KIND 'Deployment' is not a kind; kinds: Cluster, Project"),
    ("PinApp/Search/web", "PROJECT: 'Search' is not a DNS-1123 label"),
    ("PinApp//web", "PROJECT: '' is not a DNS-1123 label"),
    ("PinApp/search/" + "x" * 60, "NAME: '" + "x" * 60 + "' is 60 characters; at most 52"),
])
def test_a_bad_reference_names_the_wrong_part(text: str, says: str) -> None:
    with pytest.raises(AppRefError) as raised:
        parse_app_ref(text)
    assert says in str(raised.value)


def test_a_huge_argument_is_cut_in_the_message() -> None:
    with pytest.raises(AppRefError) as raised:
        parse_app_ref("P" * 1_000_000 + "/a/b")
    assert len(str(raised.value)) < 500 and "(1000004 characters)" in str(raised.value)


@pytest.mark.parametrize("command", [
    ["explain", "PinAp/search/web", "--root", "."],
    ["set", "replicas", "PinAp/search/web", "3", "-C", "."],
    ["status", "PinAp/search/web", "--kubeconfig", "/nonexistent"],
    ["fleet", "load", "PinAp/search/web", "--cpu", "50%", "--dir", "/nonexistent"],
])
def test_every_command_gives_the_same_usage_error(command: list[str], tmp_path: Path) -> None:
    done = CliRunner().invoke(cli, command)
    assert done.exit_code == 2, done.output
    assert "'PinAp/search/web': KIND 'PinAp' is not a kind; did you mean 'PinApp'?" \
        in done.output
    assert "Traceback" not in done.output
