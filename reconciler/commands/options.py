"""Option types shared by the reconciler's commands: durations such as ``30s`` or ``1h30m``
(the spec language's grammar)."""

from __future__ import annotations

import re

import click

from pincompile.models.types import duration_seconds, is_duration

_SECONDS = re.compile(r"^\d+(?:\.\d+)?$")


def parse_duration(value: str) -> float:
    """A duration as specs write it (``500ms``, ``30s``, ``3m``, ``1h30m``, ``2d``), or plain
    seconds (``2.5``) → seconds."""
    text = value.strip()
    if _SECONDS.match(text):
        return float(text)
    if not is_duration(text):
        raise click.BadParameter(f"'{value}' is not a duration like 30s, 5m, 1h30m or 2d")
    return float(duration_seconds(text))


class Duration(click.ParamType):
    name = "DURATION"

    def convert(self, value: object, param: click.Parameter | None,
                ctx: click.Context | None) -> float:
        if isinstance(value, int | float):
            return float(value)
        try:
            return parse_duration(str(value))
        except click.BadParameter as exc:
            self.fail(str(exc.message), param, ctx)


DURATION = Duration()
