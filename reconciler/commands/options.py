"""Option types shared by the reconciler's commands: durations such as ``30s`` or ``3m``."""

from __future__ import annotations

import re

import click

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)?$")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration(value: str) -> float:
    """``500ms``, ``30s``, ``3m``, ``1h`` or plain seconds → seconds."""
    match = _DURATION.match(value.strip())
    if not match:
        raise click.BadParameter(f"'{value}' is not a duration like 30s, 3m or 1h")
    return float(match.group(1)) * _UNIT[match.group(2)]


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
