"""``-l SELECTOR`` reads Kubernetes label selectors; ``Targets`` is which apps ``plan`` and
``status`` act on (KIND/PROJECT/NAME, -p, -l: every condition given must hold)."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from pincompile.selector import MAX_LENGTH, SelectorError, Targets, parse_selector
from reconciler.commands.common import targets_of

LABELS = {"team": "search", "env": "prod"}


@pytest.mark.parametrize(("selector", "matches"), [
    ("", True), ("team=search", True), ("team==search", True), ("team=ads", False),
    ("team!=ads", True), ("team=search,env!=prod", False), ("team=search, env=prod", True),
    ("env in (prod, staging)", True), ("env notin (prod)", False), ("tier notin (gold)", True),
    ("team", True), ("tier", False), ("!tier", True), ("!team", False),
    ("app.kubernetes.io/name!=x", True),
])
def test_selectors_match_as_kubectl_reads_them(selector: str, matches: bool) -> None:
    assert parse_selector(selector)(LABELS) is matches


@pytest.mark.parametrize("selector", ["a=b=c", "team in (x", "=x", "team=search,,", "a b"])
def test_a_malformed_selector_says_where(selector: str) -> None:
    with pytest.raises(SelectorError, match="cannot read"):
        parse_selector(selector)


def test_a_huge_selector_is_refused_before_it_is_read() -> None:
    with pytest.raises(SelectorError, match=f"longer than {MAX_LENGTH}"):
        parse_selector("a=b," * MAX_LENGTH)


def test_targets_need_every_condition() -> None:
    web = ("PinApp", "shop", "web")
    assert Targets().everything and Targets().matches(*web)
    assert Targets([web]).matches(*web) and not Targets([web]).matches("PinApp", "shop", "api")
    assert Targets(project="shop").matches(*web)
    assert not Targets(project="shop", selector="team=search").matches(*web, {"team": "ads"})
    assert Targets(project="shop", selector="team=search").matches(*web, LABELS)
    assert not Targets([web], project="other").matches(*web)


def test_arguments_split_into_root_and_apps(tmp_path: Path) -> None:
    root, wanted = targets_of((str(tmp_path), "pinapp/shop/web"), "shop", "team=x")
    assert root == tmp_path and wanted.refs == {("PinApp", "shop", "web")}
    assert (wanted.project, wanted.selector) == ("shop", "team=x")
    assert targets_of((), None, None)[0] == Path(".")
    assert targets_of(("PinApp/shop/web",), None, None)[0] == Path(".")


def test_an_argument_that_is_neither_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(click.UsageError, match="nor a directory"):
        targets_of((str(tmp_path / "missing"),), None, None)
    with pytest.raises(click.UsageError, match="one ROOT only"):
        targets_of((str(tmp_path), str(tmp_path.parent)), None, None)
