"""Command-line durations read the way specs write them."""

from __future__ import annotations

import click
import pytest

from reconciler.commands.options import parse_duration


@pytest.mark.parametrize(("text", "seconds"), [
    ("30s", 30.0), ("500ms", 0.5), ("3m", 180.0), ("1h30m", 5400.0), ("2d", 172800.0),
    ("720h", 2592000.0), ("2.5", 2.5), (" 10 ", 10.0)])
def test_an_option_takes_every_duration_a_spec_takes(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "1.5h", "h", "10x", "-5s", "1h 30m", "1e9"])
def test_anything_else_is_a_usage_error_naming_the_value(text: str) -> None:
    with pytest.raises(click.BadParameter, match="is not a duration like 30s"):
        parse_duration(text)
